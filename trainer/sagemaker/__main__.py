"""``python -m trainer.sagemaker``: launch ``trainer.train`` as a SageMaker training job
(``trainer.sagemaker.launch``)."""

import sys

from trainer.sagemaker.launch import main

sys.exit(main())
