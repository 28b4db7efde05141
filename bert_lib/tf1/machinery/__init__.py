"""How the TF 1.x API reaches user code: whose code it is, the modules, the hook, the launch.

user_code.py tells the user's code (the script, the modules beside it,
installed packages written for TF 1.x, which tf1_packages.py finds) from
everything else; namespaces.py makes the API's modules and refuses, at the
user's line, what they do not provide; import_hook.py wraps
`builtins.__import__` so that `import tensorflow` (and `import numpy`) in
user code gets them; launcher.py is what run_tf1.py and tf.app.run do
before and around the user's code (sys.path, a script or `-m` module run
as __main__, TF 1.x's flag parsing); user_errors.py reports a failure of
the user's code as one ERROR line at its line. None of these knows an API:
the modules are built by bert_lib/tf1/__init__.py.
"""
