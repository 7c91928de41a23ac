//! The token stream of a corpus, split into training and validation parts, and random
//! batches of windows from it (nanoGPT's `get_batch`).

use tinytorch::{Device, Generator, Result, Tensor};

/// Token ids of a corpus: the first 90% train, the rest validate.
pub struct TokenData {
    /// The training tokens.
    pub train: Vec<i64>,
    /// The validation tokens (the corpus's last 10%).
    pub val: Vec<i64>,
}

impl TokenData {
    /// Split the token ids `ids` of a corpus.
    pub fn new(ids: Vec<usize>) -> TokenData {
        let ids: Vec<i64> = ids.into_iter().map(|i| i as i64).collect();
        let cut = ids.len() * 9 / 10;
        TokenData {
            val: ids[cut..].to_vec(),
            train: ids[..cut].to_vec(),
        }
    }
}

/// `batch` random windows of `block + 1` tokens of `ids`: inputs and the next tokens,
/// both `(batch, block)`.
pub fn batch(
    ids: &[i64],
    batch: usize,
    block: usize,
    g: &mut Generator,
) -> Result<(Tensor, Tensor)> {
    let starts = Tensor::randint_with(0, (ids.len() - block) as i64, &[batch], Device::Cpu, g)?
        .to_vec::<i64>()?;
    let (mut x, mut y) = (
        Vec::with_capacity(batch * block),
        Vec::with_capacity(batch * block),
    );
    for s in starts {
        let s = s as usize;
        x.extend_from_slice(&ids[s..s + block]);
        y.extend_from_slice(&ids[s + 1..s + block + 1]);
    }
    Ok((
        Tensor::from_vec(x, &[batch, block])?,
        Tensor::from_vec(y, &[batch, block])?,
    ))
}
