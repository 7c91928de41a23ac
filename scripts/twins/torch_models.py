"""PyTorch definitions of the models `tinytorch train --model` builds (tinytorch/src/models/).

The state-dict keys and shapes equal TinyTorch's parameter names, so a safetensors state dict
moves between the frameworks unchanged (`--init FILE` on either side).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(channels=1, height=28, width=28, classes=10):
    return nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, 128), nn.ReLU(), nn.Linear(128, classes))


def seed_cnn(channels=1, height=28, width=28, classes=10):
    return nn.Sequential(
        nn.Conv2d(channels, 48, 5, padding=2), nn.ReLU(),
        nn.Conv2d(48, 96, 5, padding=2), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(96, 128), nn.ReLU(),
        nn.Linear(128, classes),
    )


def lenet5(channels=1, height=28, width=28, classes=10):
    pad = max(32 - height, 32 - width, 0) // 2
    side = lambda n: ((n + 2 * pad - 4) // 2 - 4) // 2
    return nn.Sequential(
        nn.Conv2d(channels, 6, 5, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * side(height) * side(width), 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, classes),
    )


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.stride, self.pad = stride, (planes - in_planes) // 2

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        short = x
        if self.stride != 1 or self.pad:
            short = F.pad(x[:, :, ::self.stride, ::self.stride], (0, 0, 0, 0, self.pad, self.pad))
        return F.relu(out + short)


class ResNet(nn.Module):
    def __init__(self, channels=1, classes=10, blocks=3):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        in_planes = 16
        for i, (planes, stride) in enumerate([(16, 1), (32, 2), (64, 2)]):
            layer = []
            for b in range(blocks):
                layer.append(BasicBlock(in_planes, planes, stride if b == 0 else 1))
                in_planes = planes
            setattr(self, f"layer{i + 1}", nn.Sequential(*layer))
        self.linear = nn.Linear(64, classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        return self.linear(F.adaptive_avg_pool2d(out, 1).flatten(1))


def resnet20(channels=1, height=28, width=28, classes=10):
    return ResNet(channels, classes, 3)


MODELS = {"mlp": mlp, "seed-cnn": seed_cnn, "lenet5": lenet5, "resnet20": resnet20}
