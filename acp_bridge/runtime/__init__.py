"""The process shell both faces share: stdio claimed and framed, the core loaded and set up, signals,
and the way out that leaves no process behind."""
