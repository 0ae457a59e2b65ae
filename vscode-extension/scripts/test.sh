#!/usr/bin/env bash
# Placeholder until the extension issue lands: there is no extension code yet.
echo "vscode-extension: no extension yet"
