"""Formats shared by the writer (pipeline) and the readers (trainer, verify): defined once."""
