import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

# Small tensor ops do not get faster with more threads on these machines, and several test
# processes may share two cores.
torch.set_num_threads(1)
