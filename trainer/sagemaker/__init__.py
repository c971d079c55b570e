"""SageMaker: submitting ``trainer.train`` as a training job, and running inside one.

The launcher, ``python -m trainer.sagemaker`` (``__main__``, ``launch``): ``spec`` (the job as
plain data), ``sdk`` (that data -> the SageMaker Python SDK v3, the one module that imports
it, only to submit). In the container: ``env`` (SageMaker's conventions -> ``trainer.train``'s
defaults) and ``entry`` (the image's entry point, ``python -m trainer.sagemaker.entry``).
Nothing is imported here: neither TensorFlow nor the SDK is needed to launch a dry run.
"""
