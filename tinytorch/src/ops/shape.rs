//! TODO(helper): this family is written in a later step.
