"""Serving the trained GPT: a SavedModel that turns prompts into completions in one graph.

``sampling`` and ``decode`` are plain TensorFlow (next-token choice, decoding with the key/value
cache); ``text`` puts the dataset's SentencePiece model in the graph (the one module that
imports tensorflow_text); ``saved_model`` builds the signatures and writes the export;
``from_run`` rebuilds a training run's model and tokenizer; ``options`` holds the decoding
flags; ``python -m trainer.export`` (``__main__``) exports a run again. Nothing is imported
here, so code that only decodes never loads tensorflow_text.
"""
