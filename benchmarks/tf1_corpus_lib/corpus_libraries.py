"""The corpus's repositories built on a pip-installed TF 1.x library, tensor2tensor problems
and BERT-era NLP beside BERT (corpus.py's Repository and Step; same rules: the README's
steps, flags that keep them tiny, the code unchanged)."""

from . import libraries_data
from .corpus import Repository
from .runner import Step

REPOSITORIES = [
    Repository(
        "tflearn/tflearn",
        "pip-installed TF 1.x library (TFLearn 0.3.2 examples: DNN fit, save / load, "
        "weights; a convnet)",
        [
            Step(
                ["examples/basics/weights_persistence.py"],
                env={"PYTHONPATH": "."},
                trains=True,
                scratch=("/tmp/tflearn_logs",),
            ),
            Step(
                ["examples/images/convnet_mnist.py"],
                env={"PYTHONPATH": "."},
                trains=True,
                scratch=("/tmp/tflearn_logs",),
            ),
        ],
        libraries_data.tflearn_mnist,
        commit="17cee59",
    ),
]
