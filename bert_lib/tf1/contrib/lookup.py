"""tf.contrib.lookup of TF 1.x: vocabulary tables, initialized by tf.tables_initializer().

TensorFlow 2 still has TF 1.x's tables behind its public tf.lookup (the
HashTable whose `init` a session runs, the index_table_from_* builders with
their out-of-vocabulary buckets hashed as TF 1.x hashed them); they are
given here under contrib.lookup's names, with the four functions contrib
had of its own (string_to_index, index_to_string and their older table
builders' names).
"""

from tensorflow.python.ops import lookup_ops

from ..machinery.namespaces import Namespace

# What TF 1.15's tf.contrib.lookup exported that TensorFlow 2 keeps under the same name.
_KEPT = (
    "index_table_from_file",
    "index_table_from_tensor",
    "index_to_string_table_from_file",
    "index_to_string_table_from_tensor",
    "LookupInterface",
    "InitializableLookupTableBase",
    "IdTableWithHashBuckets",
    "HashTable",
    "MutableHashTable",
    "MutableDenseHashTable",
    "TableInitializerBase",
    "KeyValueTensorInitializer",
    "TextFileIndex",
    "TextFileInitializer",
    "TextFileIdTableInitializer",
    "TextFileStringTableInitializer",
    "HasherSpec",
    "StrongHashSpec",
    "FastHashSpec",
)


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """The int64 index of each string of `tensor` in the 1-D string tensor `mapping`
    (default_value where absent); the table is initialized by tf.tables_initializer()."""
    table = lookup_ops.index_table_from_tensor(mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """The string of `mapping` at each int64 index of `tensor` (default_value outside it)."""
    table = lookup_ops.index_to_string_table_from_tensor(
        mapping, default_value=default_value, name=name
    )
    return table.lookup(tensor)


def lookup_module():
    """tf.contrib.lookup (also as tensorflow.contrib.lookup.lookup_ops)."""
    names = {name: getattr(lookup_ops, name) for name in _KEPT}
    names.update(
        {
            "string_to_index": string_to_index,
            "index_to_string": index_to_string,
            "string_to_index_table_from_file": lookup_ops.index_table_from_file,
            "string_to_index_table_from_tensor": lookup_ops.index_table_from_tensor,
        }
    )
    module = Namespace("tf.contrib.lookup", None, names)
    module.__dict__["lookup_ops"] = module  # tensorflow.contrib.lookup.lookup_ops
    return module
