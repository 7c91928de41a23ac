"""REINFORCE in the idiom of pytorch/examples' reinforcement_learning/reinforce.py, on a
small deterministic environment written here instead of gym's CartPole: a ``Policy``
module that keeps ``saved_log_probs`` and ``rewards``, ``select_action`` with
``Categorical(probs)`` and ``m.log_prob(action)``, ``finish_episode`` with discounted returns
built backwards into a ``deque``, normalised with ``(returns - returns.mean()) /
(returns.std() + eps)``, the loss ``torch.cat(policy_loss).sum()`` and Adam (lr 1e-2); the
running reward of the example's main loop.

The example samples with ``m.sample()``, which draws from the library's own random
generator: tinytorch's and PyTorch's streams differ, so the two would take different
actions. Here the uniform comes from NumPy and the action is its inverse CDF over
``probs.cumsum(-1)`` (the first action whose cumulative probability exceeds the draw), the
same distribution as ``m.sample()``, identical in both libraries. Dropout is 0 (the
example's 0.6 would draw from the library's generator too).
"""

from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

from ._common import abs_sums, numpy_state_dict

gamma = 0.99
eps = np.finfo(np.float32).eps.item()


class Corridor:
    """A corridor of ``n`` cells; the agent starts in the middle and moves left (action 0)
    or right (action 1). Reaching the right end pays 1 and ends the episode, the left end
    pays -1 and ends it; every other step costs 0.05; at most ``max_steps`` steps. The
    observation is the one-hot cell plus the fraction of steps used."""

    def __init__(self, n=5, max_steps=12):
        self.n, self.max_steps = n, max_steps

    def _obs(self):
        obs = np.zeros(self.n + 1)
        obs[self.pos] = 1.0
        obs[-1] = self.t / self.max_steps
        return obs

    def reset(self):
        self.pos, self.t = self.n // 2, 0
        return self._obs(), {}

    def step(self, action):
        self.pos += 1 if action == 1 else -1
        self.t += 1
        if self.pos == self.n - 1:
            return self._obs(), 1.0, True, False, {}
        if self.pos == 0:
            return self._obs(), -1.0, True, False, {}
        return self._obs(), -0.05, False, self.t >= self.max_steps, {}


class Policy(nn.Module):
    def __init__(self, n_obs, n_actions):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(n_obs, 32)
        self.dropout = nn.Dropout(p=0.0)
        self.affine2 = nn.Linear(32, n_actions)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


def run(episodes=12, seed=543):
    rng = np.random.default_rng(seed)
    env = Corridor()
    policy = Policy(env.n + 1, 2)
    policy.load_state_dict(numpy_state_dict(policy, seed))
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        # Inverse-CDF sampling with a NumPy uniform instead of m.sample(): the same
        # distribution, and the same action in every library (see the module docstring).
        u = rng.random()
        cdf = probs.detach().cumsum(-1)[0]
        action = torch.tensor([min(int((cdf <= u).sum().item()), probs.size(-1) - 1)])
        policy.saved_log_probs.append(m.log_prob(action))
        return action.item()

    def finish_episode():
        R = 0
        policy_loss = []
        returns = deque()
        for r in policy.rewards[::-1]:
            R = r + gamma * R
            returns.appendleft(R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for log_prob, R in zip(policy.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        optimizer.zero_grad()
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        return policy_loss.item()

    running_reward = 10
    actions, ep_rewards, running, losses = [], [], [], []
    for i_episode in range(episodes):
        state, _ = env.reset()
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            actions.append(action)
            state, reward, terminated, truncated, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if terminated or truncated:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        losses.append(finish_episode())
        ep_rewards.append(ep_reward)
        running.append(running_reward)
    with torch.no_grad():
        start = torch.from_numpy(Corridor().reset()[0]).float().unsqueeze(0)
        final_probs = policy(start)[0].tolist()
    return {
        'actions': actions,
        'episode_rewards': ep_rewards,
        'running_rewards': running,
        'losses': losses,
        'final_probs': final_probs,
        'sums': abs_sums(policy),
    }
