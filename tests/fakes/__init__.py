"""The tests' fake providers: one local HTTP server (``wire.py``) speaking every provider
wire format the suite's clients use, with the scripted models (``scripts.py``) it answers
with."""
