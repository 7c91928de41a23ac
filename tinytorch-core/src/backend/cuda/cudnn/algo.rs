//! Which cuDNN algorithm runs a convolution: chosen once per (device, pass, problem, flags)
//! and kept in one process-wide map, as PyTorch keeps its per-shape cache, so that the
//! heuristic query, or the timing runs under `benchmark`, happen on the first convolution
//! of a shape only. The choice among what cuDNN returns is plain host logic, tested here
//! without a GPU; asking cuDNN is `conv.rs`'s job.

use super::problem::ConvProblem;
use cudarc::cudnn::sys::{
    cudnnConvolutionBwdDataAlgo_t, cudnnConvolutionBwdFilterAlgo_t, cudnnConvolutionFwdAlgo_t,
};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Which of a convolution's three computations an algorithm is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Pass {
    /// `y = conv(x, w)`.
    Forward,
    /// The input's gradient from the output's.
    BackwardData,
    /// The weight's gradient from the input and the output's gradient.
    BackwardFilter,
}

/// An algorithm of one of the three passes, as cuDNN names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algo {
    /// A forward algorithm.
    Forward(cudnnConvolutionFwdAlgo_t),
    /// A backward-data algorithm.
    BackwardData(cudnnConvolutionBwdDataAlgo_t),
    /// A backward-filter algorithm.
    BackwardFilter(cudnnConvolutionBwdFilterAlgo_t),
}

/// What cuDNN reports of one algorithm, from its heuristic (`cudnnGet*Algorithm_v7`, in
/// its order of expected speed) or from timing it (`cudnnFind*AlgorithmEx`, fastest first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Candidate<A> {
    /// The algorithm.
    pub algo: A,
    /// cuDNN's status for it was success (it supports this problem; under timing, it ran).
    pub ok: bool,
    /// It gives the same bits run to run.
    pub deterministic: bool,
    /// Workspace bytes it needs.
    pub workspace: usize,
}

/// The candidates that may run, in cuDNN's order (best first): those whose status is
/// success, and where `deterministic` is asked, only deterministic ones. The caller takes
/// the first whose workspace it can allocate, as PyTorch does.
pub(crate) fn allowed<A: Copy>(
    candidates: &[Candidate<A>],
    deterministic: bool,
) -> impl Iterator<Item = Candidate<A>> + '_ {
    candidates
        .iter()
        .copied()
        .filter(move |c| c.ok && (c.deterministic || !deterministic))
}

/// The algorithm a problem runs and the workspace bytes it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The algorithm.
    pub algo: Algo,
    /// Workspace bytes to allocate for each run.
    pub workspace: usize,
}

/// What a choice depends on: the device (GPUs differ in what is fastest), the pass, the
/// problem (shapes, dtype, stride, padding, dilation, groups, TF32) and the flags that
/// change the choice. A change of flag makes a new key, so the old choice is not reused
/// for the new setting and is there again when the flag goes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The device ordinal.
    pub ordinal: usize,
    /// The pass.
    pub pass: Pass,
    /// The convolution.
    pub problem: ConvProblem,
    /// Only deterministic algorithms allowed.
    pub deterministic: bool,
    /// Chosen by timing rather than by the heuristic.
    pub benchmark: bool,
}

fn cache() -> &'static Mutex<HashMap<Key, Choice>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Choice>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The choice for `key`, from the cache or else from `choose` (then kept). The lock is not
/// held while `choose` runs, since timing algorithms takes long and runs convolutions: two
/// threads meeting a new shape at once may both choose, and the later choice is kept.
/// `choose`'s error is returned and nothing is kept, so a later call asks again.
pub(crate) fn choice_for<E>(
    key: Key,
    choose: impl FnOnce() -> Result<Choice, E>,
) -> Result<Choice, E> {
    if let Some(c) = cache().lock().expect("poisoned").get(&key) {
        return Ok(*c);
    }
    let c = choose()?;
    cache().lock().expect("poisoned").insert(key, c);
    Ok(c)
}

/// Number of choices kept (for tests and for a profiler).
pub fn cached_choices() -> usize {
    cache().lock().expect("poisoned").len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Conv2dSpec;
    use crate::backend::ConvGeometry;
    use crate::base::DType;
    use cudnnConvolutionFwdAlgo_t::*;

    fn cand(algo: u32, ok: bool, deterministic: bool, workspace: usize) -> Candidate<u32> {
        Candidate {
            algo,
            ok,
            deterministic,
            workspace,
        }
    }

    #[test]
    fn failed_and_nondeterministic_candidates_are_skipped() {
        let c = [
            cand(6, false, true, 0),
            cand(5, true, false, 1 << 20),
            cand(1, true, true, 64),
            cand(0, true, true, 0),
        ];
        let any: Vec<u32> = allowed(&c, false).map(|c| c.algo).collect();
        assert_eq!(any, [5, 1, 0]);
        let det: Vec<u32> = allowed(&c, true).map(|c| c.algo).collect();
        assert_eq!(det, [1, 0]);
        assert_eq!(allowed(&[cand(3, false, true, 0)], false).count(), 0);
    }

    fn problem(batch: usize, dtype: DType) -> ConvProblem {
        let spec = Conv2dSpec {
            geom: ConvGeometry {
                batch,
                channels: 3,
                input: [8, 8],
                kernel: [3, 3],
                stride: [1, 1],
                dilation: [1, 1],
                padding: [1, 1],
                output: [8, 8],
            },
            out_channels: 4,
            groups: 1,
        };
        ConvProblem::new(&spec, dtype, true).unwrap()
    }

    fn key(pass: Pass, problem: ConvProblem, deterministic: bool, benchmark: bool) -> Key {
        Key {
            // An ordinal no other test uses: the cache is the process's.
            ordinal: 1_000_003,
            pass,
            problem,
            deterministic,
            benchmark,
        }
    }

    #[test]
    fn each_key_is_chosen_once() {
        let mut asked = 0;
        let mut get = |k: Key, algo| {
            choice_for::<()>(k, || {
                asked += 1;
                Ok(Choice {
                    algo: Algo::Forward(algo),
                    workspace: 16,
                })
            })
            .unwrap()
        };
        let p = problem(2, DType::F32);
        let k = key(Pass::Forward, p, false, false);
        let first = get(k, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD);
        // The second call is served from the cache: the new algorithm is not asked for.
        assert_eq!(get(k, CUDNN_CONVOLUTION_FWD_ALGO_GEMM), first);
        // Any change of shape, dtype, pass or flag is a new choice.
        for other in [
            key(Pass::Forward, problem(3, DType::F32), false, false),
            key(Pass::Forward, problem(2, DType::F16), false, false),
            key(Pass::BackwardData, p, false, false),
            key(Pass::Forward, p, true, false),
            key(Pass::Forward, p, false, true),
        ] {
            assert_eq!(
                get(other, CUDNN_CONVOLUTION_FWD_ALGO_GEMM).algo,
                Algo::Forward(CUDNN_CONVOLUTION_FWD_ALGO_GEMM)
            );
        }
        assert_eq!(asked, 6);
        assert!(cached_choices() >= 6);
    }

    #[test]
    fn a_failed_choice_is_not_kept() {
        let k = key(Pass::BackwardFilter, problem(5, DType::BF16), false, false);
        assert_eq!(choice_for(k, || Err("no algorithm")), Err("no algorithm"));
        let algo = Algo::BackwardFilter(
            cudnnConvolutionBwdFilterAlgo_t::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
        );
        let c = choice_for::<()>(k, || Ok(Choice { algo, workspace: 0 })).unwrap();
        assert_eq!(c.algo, algo);
    }
}
