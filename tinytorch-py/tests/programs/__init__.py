"""Training programs in the idioms of well-known public PyTorch scripts (issue 48).

Each module is written against ``import torch`` and exposes ``run()``, which trains a tiny
model for a few steps and returns a dict of plain Python numbers and lists. With real
PyTorch, scripts/fixtures/gen_program_fixtures.py stores those dicts in
tests/fixtures/programs.json; tests/test_public_programs.py runs the same modules with
``import torch`` resolved to tinytorch (tests/conformance/torch_shim.py) and compares.

Every random number comes from NumPy (data, initial weights, noise, sampling), never from
the library's own generator, so both libraries compute on identical numbers.
"""

#: The program modules, in the order the fixture generator and the test run them.
PROGRAMS = ["gpt", "word_language_model", "dcgan", "vae", "time_sequence_prediction",
            "reinforce"]
