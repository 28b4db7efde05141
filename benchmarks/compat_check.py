"""Runs this project and the original 2018 BERT code side by side and compares outputs.

The code lives in benchmarks/compat_check_lib/ (see its __init__ and orchestrator for
the checks); this is the command:

  .venv/bin/python benchmarks/compat_check.py --original_dir=/tmp/orig \\
      --original_python=/tmp/venv37/bin/python --work_dir=/tmp/compat_run
"""

from compat_check_lib.orchestrator import main

if __name__ == "__main__":
    main()
