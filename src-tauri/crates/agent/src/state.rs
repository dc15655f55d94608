//! The loop's states and the transitions between them. The loop asks [`next`] before each move,
//! so a transition that should not happen is caught in tests, not discovered by users.

use codewright_protocol::AgentState;

/// What happened, as the state machine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A slot is free, but the project's MCP servers are still starting: wait for them.
    AwaitServers,
    /// A slot is free (and the servers are up): send the first request.
    Start,
    /// The answer called tools.
    ToolCalls,
    /// A tool call asks the user.
    ApprovalAsked,
    /// The user answered (or the stop resolved it).
    ApprovalAnswered,
    /// All tool results are in: send the next request.
    ToolsDone,
    /// The context is too full: summarize first.
    Compact,
    /// The summary is written: send the request.
    Compacted,
    /// The answer called no tools, the user stopped, the limit was hit, or an error ended it.
    End,
}

/// The state after `step` in `from`, or `None` if the step cannot happen there.
pub fn next(from: AgentState, step: Step) -> Option<AgentState> {
    use AgentState::*;
    Some(match (from, step) {
        (_, Step::End) => Idle,
        (Queued | Idle, Step::AwaitServers) => StartingServers,
        (Queued | Idle | StartingServers, Step::Start) => Streaming,
        (Streaming, Step::ToolCalls) => RunningTools,
        (RunningTools | AwaitingApproval, Step::ApprovalAsked) => AwaitingApproval,
        (AwaitingApproval, Step::ApprovalAnswered) => RunningTools,
        (RunningTools, Step::ToolsDone) => Streaming,
        (Streaming | RunningTools | Idle | Queued | StartingServers, Step::Compact) => Compacting,
        (Compacting, Step::Compacted) => Streaming,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use AgentState::*;

    #[test]
    fn transitions() {
        let path = [
            (Queued, Step::AwaitServers, StartingServers),
            (StartingServers, Step::Start, Streaming),
            (Queued, Step::Start, Streaming),
            (Streaming, Step::ToolCalls, RunningTools),
            (RunningTools, Step::ApprovalAsked, AwaitingApproval),
            (AwaitingApproval, Step::ApprovalAnswered, RunningTools),
            (RunningTools, Step::ToolsDone, Streaming),
            (Streaming, Step::Compact, Compacting),
            (Compacting, Step::Compacted, Streaming),
            (Streaming, Step::End, Idle),
            (AwaitingApproval, Step::End, Idle),
        ];
        for (from, step, to) in path {
            assert_eq!(next(from, step), Some(to), "{from:?} --{step:?}-->");
        }
        for (from, step) in [
            (Idle, Step::ToolCalls),
            (Streaming, Step::ApprovalAsked),
            (Streaming, Step::ToolsDone),
            (Compacting, Step::ToolCalls),
            (AwaitingApproval, Step::ToolsDone),
            (Streaming, Step::AwaitServers),
            (StartingServers, Step::ToolCalls),
        ] {
            assert_eq!(
                next(from, step),
                None,
                "{from:?} --{step:?}--> must not happen"
            );
        }
    }
}
