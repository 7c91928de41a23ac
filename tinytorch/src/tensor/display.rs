//! PyTorch-style printing of tensors. TODO(helper): implement.
