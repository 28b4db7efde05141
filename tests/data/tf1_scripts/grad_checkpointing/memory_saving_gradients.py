"""Gradients that keep only the activations of chosen checkpoints, recomputing the rest of
the forward pass segment by segment while backpropagating (gradient checkpointing)."""
import contextlib
import time

import tensorflow as tf
import tensorflow.contrib.graph_editor as ge
from tensorflow.python.ops import gradients as tf_gradients_lib

tf_gradients = tf_gradients_lib.gradients


def gradients_collection(ys, xs, grad_ys=None, **kwargs):
  return gradients(ys, xs, grad_ys, checkpoints="collection", **kwargs)


@contextlib.contextmanager
def capture_ops():
  """The ops made inside the block, found afterwards by their name scope."""
  scope_name = str(int(time.time() * 10**6))
  op_list = []
  with tf.name_scope(scope_name):
    yield op_list
  op_list.extend(ge.select_ops(scope_name + "/.*", graph=tf.get_default_graph()))


def tf_toposort(ts, within_ops=None):
  """Groups of the tensors ts, each group depending only on earlier groups."""
  all_ops = ge.get_forward_walk_ops([t.op for t in ts], within_ops=within_ops)
  deps = {}
  for op in all_ops:
    for output in op.outputs:
      deps[output] = set(op.inputs)
  remaining = {t: deps.get(t, set()) & set(deps) for t in deps}
  groups = []
  while remaining:
    ready = [t for t, d in remaining.items() if not d]
    if not ready:
      raise ValueError("cycle")
    groups.append(set(ready))
    remaining = {t: d - set(ready) for t, d in remaining.items() if t not in ready}
  wanted = set(ts)
  return [sorted(g & wanted, key=lambda t: t.name) for g in groups if g & wanted]


def fast_backward_ops(within_ops, seed_ops, stop_at_ts):
  bwd_ops = set(ge.get_backward_walk_ops(seed_ops, stop_at_ts=stop_at_ts))
  ops = bwd_ops.intersection(within_ops).difference([t.op for t in stop_at_ts])
  return list(ops)


def my_add_control_inputs(wait_to_do_ops, inputs_to_do_before):
  for op in wait_to_do_ops:
    ci = [i for i in inputs_to_do_before if op.control_inputs is None or i not in op.control_inputs]
    ge.add_control_inputs(op, ci)


def gradients(ys, xs, grad_ys=None, checkpoints="collection", **kwargs):
  if not isinstance(ys, list):
    ys = [ys]
  if not isinstance(xs, list):
    xs = [xs]
  bwd_ops = ge.get_backward_walk_ops([y.op for y in ys], inclusive=True)
  fwd_ops = ge.get_forward_walk_ops([x.op for x in xs], inclusive=True, within_ops=bwd_ops)
  xs_ops = [x.op for x in xs]
  fwd_ops = [op for op in fwd_ops if op not in xs_ops]
  fwd_ops = [op for op in fwd_ops if "/assign" not in op.name]
  fwd_ops = [op for op in fwd_ops if "/Assign" not in op.name]
  fwd_ops = [op for op in fwd_ops if "/read" not in op.name]
  ts_all = ge.filter_ts(fwd_ops, True)
  ts_all = [t for t in ts_all if "/read" not in t.name]
  ts_all = set(ts_all) - set(xs) - set(ys)

  if checkpoints == "collection":
    checkpoints = tf.get_collection("checkpoints")
  elif checkpoints == "speed":
    checkpoints = ge.filter_ts_from_regex(fwd_ops, "conv2d|Conv|MatMul")
  else:
    raise Exception("%s is unsupported input for 'checkpoints'" % (checkpoints,))
  checkpoints = list(set(checkpoints).intersection(ts_all))

  checkpoints_disconnected = {}
  for x in checkpoints:
    grad_node = tf.stop_gradient(x, name=x.op.name + "_sg")
    checkpoints_disconnected[x] = grad_node

  ops_to_copy = fast_backward_ops(seed_ops=[y.op for y in ys], stop_at_ts=checkpoints, within_ops=fwd_ops)
  copied_sgv, info = ge.copy_with_input_replacements(ge.sgv(ops_to_copy), {})
  copied_ops = info._transformed_ops.values()
  ge.reroute_ts(list(checkpoints_disconnected.values()), list(checkpoints_disconnected.keys()),
                can_modify=copied_ops)
  copied_ys = [info._transformed_ops[y.op]._outputs[0] for y in ys]
  boundary = list(checkpoints_disconnected.values())
  dv = tf_gradients(ys=copied_ys, xs=boundary + xs, grad_ys=grad_ys, **kwargs)
  inputs_to_do_before = [y.op for y in ys]
  if grad_ys is not None:
    inputs_to_do_before += grad_ys
  wait_to_do_ops = list(copied_ops) + [g.op for g in dv if g is not None]
  my_add_control_inputs(wait_to_do_ops, inputs_to_do_before)

  d_checkpoints = {r: dr for r, dr in zip(checkpoints_disconnected.keys(), dv[:len(checkpoints_disconnected)])}
  d_xs = dv[len(checkpoints_disconnected):]

  checkpoints_sorted_lists = tf_toposort(checkpoints, within_ops=fwd_ops)
  for ts in checkpoints_sorted_lists[::-1]:
    checkpoints_other = [r for r in checkpoints if r not in ts]
    checkpoints_disconnected_other = [checkpoints_disconnected[r] for r in checkpoints_other]
    ops_to_copy = fast_backward_ops(within_ops=fwd_ops, seed_ops=[r.op for r in ts], stop_at_ts=checkpoints_other)
    if not ops_to_copy:
      break
    copied_sgv, info = ge.copy_with_input_replacements(ge.sgv(ops_to_copy), {})
    copied_ops = info._transformed_ops.values()
    ge.reroute_ts(checkpoints_disconnected_other, checkpoints_other, can_modify=copied_ops)
    boundary = [info._transformed_ops[r.op]._outputs[0] for r in ts]
    substitute_backprops = [d_checkpoints[r] for r in ts]
    dv = tf_gradients(boundary, checkpoints_disconnected_other + xs, grad_ys=substitute_backprops, **kwargs)
    inputs_to_do_before = [d_checkpoints[r].op for r in ts]
    wait_to_do_ops = list(copied_ops) + [g.op for g in dv if g is not None]
    my_add_control_inputs(wait_to_do_ops, inputs_to_do_before)
    for r, dr in zip(checkpoints_other, dv[:len(checkpoints_other)]):
      if dr is not None:
        if d_checkpoints[r] is None:
          d_checkpoints[r] = dr
        else:
          d_checkpoints[r] += dr
    for j in range(len(xs)):
      dx = dv[len(checkpoints_other) + j]
      if dx is not None:
        if d_xs[j] is None:
          d_xs[j] = dx
        else:
          d_xs[j] += dx
  return d_xs
