"""What the core may ask of an editor: `ClientChannel` (the seam every face implements), the editor's
file system for the file tools, and the questions of the `ask_user` tool."""
