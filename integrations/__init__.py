"""Framework integrations: each translates a framework's objects to and from the engine."""
