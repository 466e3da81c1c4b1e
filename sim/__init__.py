"""llumsim: a discrete-event simulator of Llumnix-style multi-instance LLM serving on Vidur."""

__version__ = "0.1.0"
