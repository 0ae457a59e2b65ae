"""Checkpoints: snapshots of a session's roots in a shadow git store outside them, the files each call
changed (drawn on its card as diffs, told to the model), and putting them back (`/rewind`, reverting one
file of a card, a fork at a turn). User docs: docs/checkpoints.md."""
