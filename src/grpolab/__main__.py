"""``python -m grpolab`` is the same as the ``grpolab`` command.

It is also how several processes start one command: ``accelerate launch --num_processes 8
-m grpolab lab train --backend trl ...`` runs ``python -m grpolab lab train ...`` once per GPU.
"""

import sys

from grpolab.cli.main import main

sys.exit(main())
