"""Sine-wave prediction in the idiom of pytorch/examples' time_sequence_prediction
(generate_sine_wave.py and train.py): a ``Sequence`` of two stacked ``nn.LSTMCell`` and a
``Linear``, unrolled over the time steps with ``input.split(1, dim=1)``, continuing
``future`` steps on its own outputs; the model in float64 with ``.double()``, ``nn.MSELoss``
and ``optim.LBFGS(lr=0.8)`` stepped with a closure; then a prediction of future steps under
``torch.no_grad()``. Smaller than the example (hidden 12 instead of 51, 30 time steps, 2
optimisation steps); the waves come from NumPy as in generate_sine_wave.py.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

from ._common import abs_sums, numpy_state_dict

HIDDEN = 12


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def sine_waves(seed, T=20, L=31, N=8):
    """generate_sine_wave.py, smaller: N waves of length L with random phase shifts."""
    rng = np.random.default_rng(seed)
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + rng.integers(-4 * T, 4 * T, N).reshape(N, 1)
    return np.sin(x / 1.0 / T).astype('float64')


def run(steps=2, future=10, seed=0):
    data = sine_waves(seed)
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    # build the model
    seq = Sequence()
    seq.double()
    seq.load_state_dict(numpy_state_dict(seq, seed))
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    closure_losses, step_losses, test_losses = [], [], []
    # begin to train
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            closure_losses.append(loss.item())
            loss.backward()
            return loss
        step_losses.append(optimizer.step(closure).item())
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            test_losses.append(loss.item())
            y = pred.detach().numpy()
    return {
        'closure_losses': closure_losses,
        'step_losses': step_losses,
        'test_losses': test_losses,
        'prediction_tail': [float(v) for v in y[0, -future:]],
        'prediction_abs_sum': float(np.abs(y).sum()),
        'dtype': str(pred.dtype),
        'sums': abs_sums(seq),
    }
