"""A typical MLP training loop with a DataLoader, as a user writes it; checked with
`mypy --strict` by tests/test_stubs.py and run by it too."""

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
from tinytorch import Tensor
from tinytorch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, d_in: int, hidden: int, n_classes: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)
        self.drop = nn.Dropout(p=0.1)

    def forward(self, x: Tensor) -> Tensor:
        h: Tensor = F.relu(self.fc1(x))
        out: Tensor = self.fc2(self.drop(h))
        return out


def train(epochs: int = 2) -> float:
    torch.manual_seed(0)
    x = torch.randn(64, 10)
    y = torch.randint(0, 3, (64,))
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = MLP(10, 32, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    last = 0.0
    for _ in range(epochs):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            last = float(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(x)
        acc = (logits.argmax(dim=1) == y).float().mean().item()
    print(f"loss {last:.3f} accuracy {acc:.2f}")
    return last


if __name__ == "__main__":
    train()
