"""The shared leaves every folder may use: errors with their JSON-RPC codes, the JSON encoder of what the
bridge writes, the API key store, the permission modes and defaults, the state directory, the client's
capabilities. Standard library (and orjson) only; imports no other folder of the package."""
