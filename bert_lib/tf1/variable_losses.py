"""The regularization losses of variables, as TF 1.x collected them.

A variable made with a regularizer (`tf.get_variable(..., regularizer=...)`,
or under a variable_scope that has one) put its loss tensor in
tf.GraphKeys.REGULARIZATION_LOSSES in TF 1.x: a Tensor, made in the
variable's `<name>/Regularizer/` scope. TensorFlow 2 puts a stand-in there
instead (variable_scope's _LazyEvalTensor, which remakes the loss wherever
it is used) that lacks much of a Tensor: `ref()`, which
tf.train.ExponentialMovingAverage.apply keys its averages by (TFLearn
averages its losses, the regularization ones among them, that way).
The stand-in already makes the loss once, as TF 1.x did, in that scope
and colocated with the variable: that first tensor is what goes in the
collection.
"""

from tensorflow.python.ops import variable_scope


def _first_loss(make_loss):
    return make_loss()


def collect_loss_tensors():
    """From now on, a regularized variable's loss in the collection is a Tensor."""
    variable_scope._LazyEvalTensor = _first_loss
