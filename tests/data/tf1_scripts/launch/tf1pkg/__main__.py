import json
import sys

import tensorflow as tf

from .helpers import total

print(json.dumps({"name": __name__, "package": __package__, "argv": sys.argv[1:],
                  "total": int(total([4])), "has_config": hasattr(tf, "ConfigProto")}))
