"""A small CNN: Conv2d/BatchNorm/MaxPool layers in nn.Sequential, a forward pass, a
state_dict round trip through torch.save/torch.load; checked with `mypy --strict`."""

import io

import tinytorch as torch
from tinytorch import Tensor, nn


class SmallCNN(nn.Module):
    def __init__(self, channels: int = 8, n_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.head = nn.Linear(2 * channels, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = torch.flatten(x, 1)
        logits: Tensor = self.head(x)
        return logits


def main() -> None:
    model = SmallCNN()
    images = torch.randn(4, 1, 28, 28)
    logits = model(images)
    probs = torch.softmax(logits, dim=-1)
    assert tuple(probs.shape) == (4, 10)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    copy = SmallCNN()
    copy.load_state_dict(torch.load(buf))
    copy.eval()
    with torch.no_grad():
        same = torch.allclose(copy(images), model.eval()(images))
    print(f"{n_params} parameters, reloaded model agrees: {same}")


if __name__ == "__main__":
    main()
