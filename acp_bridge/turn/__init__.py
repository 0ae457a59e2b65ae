"""The agent loop of one prompt: model step, cards, the registry's run of the step's calls, results, next
step; and what its cards need (a call's definition parsed for display, a running command's output
coalesced into frames)."""
