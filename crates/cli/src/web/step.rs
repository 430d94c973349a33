//! A round or step of a command as the live outputs announce it: what it is part of
//! (`StepKind`: a steady-state round, a sweep or find-max step, a fio job phase), its
//! number, how many there are, its label and offered rate. The command's session
//! (`crate::run::session`) hands each one, as it begins, to the live view, which
//! sends it to open pages as a `step` event (`crate::web::live_web`). A plain value:
//! it imports nothing of the crate.

/// What a round or step is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StepKind {
    /// A round of `--steady-state`.
    Round,
    /// A step of `iofleet sweep`.
    Sweep,
    /// A step of `iofleet find-max` (and `plan`'s search).
    FindMax,
    /// A stonewall phase of a fio job file.
    Phase,
}

impl StepKind {
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Round => "round",
            StepKind::Sweep => "sweep",
            StepKind::FindMax => "find-max",
            StepKind::Phase => "phase",
        }
    }
}

/// One round or step as it begins.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Step {
    pub kind: StepKind,
    /// From 1 (find-max's closed-loop measurement, before its first step, is 0).
    pub index: u32,
    /// How many there are, when known.
    pub of: Option<u32>,
    /// `of` is only a bound (steady-state rounds stop once steady).
    pub at_most: bool,
    /// What this one is: the varied setting's value, the phase's jobs, a round's number.
    pub label: String,
    /// The rate offered to the whole fleet (IOPS), when the step is open-loop.
    pub rate_iops: Option<f64>,
}
