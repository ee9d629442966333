//! The expanded size of a schema: how many subschemas it would have if every `$ref` (and
//! `$dynamicRef`, `$recursiveRef`) were replaced by a copy of its target. A schema whose
//! definitions each refer twice to the next one is small as text and astronomically large
//! expanded, and validation can walk the expansion; so the expansion is what is bounded.
//!
//! The count is memoized per node over the reference graph, so it costs one visit per node
//! and edge however large the total. A reference back to a node still being counted (a
//! cycle, as in any recursive schema) counts as one node: recursion is bounded at validation
//! time by the instance, the step budget and the depth bound, not here.

use super::keywords::{Body, Compiled, NodeId};

/// The expanded size of the schema from its root, or `Err(())` once it passes `max`.
pub(crate) fn expanded_size(compiled: &Compiled, max: u64) -> Result<u64, ()> {
    #[derive(Clone, Copy)]
    enum State {
        Unvisited,
        Counting,
        Counted(u64),
    }
    let mut state = vec![State::Unvisited; compiled.nodes.len()];
    // Each frame: a node, its children, the next child to look at, and the sum so far.
    struct Frame {
        node: NodeId,
        children: Vec<NodeId>,
        next: usize,
        sum: u64,
    }
    let children_of = |node: NodeId| {
        let mut children = Vec::new();
        if let Body::Keywords(keywords) = &compiled.nodes[node].body {
            for keyword in &keywords.list {
                keyword.children(&compiled.resources, &mut children);
            }
        }
        children
    };
    state[compiled.root] = State::Counting;
    let mut stack = vec![Frame {
        node: compiled.root,
        children: children_of(compiled.root),
        next: 0,
        sum: 1,
    }];
    while let Some(frame) = stack.last_mut() {
        if frame.sum > max {
            return Err(());
        }
        if frame.next < frame.children.len() {
            let child = frame.children[frame.next];
            frame.next += 1;
            match state[child] {
                State::Counted(size) => frame.sum = frame.sum.saturating_add(size),
                State::Counting => frame.sum = frame.sum.saturating_add(1),
                State::Unvisited => {
                    state[child] = State::Counting;
                    let children = children_of(child);
                    stack.push(Frame {
                        node: child,
                        children,
                        next: 0,
                        sum: 1,
                    });
                }
            }
            continue;
        }
        let Frame { node, sum, .. } = stack.pop().expect("the loop holds a frame");
        state[node] = State::Counted(sum);
        if let Some(parent) = stack.last_mut() {
            parent.sum = parent.sum.saturating_add(sum);
        } else {
            return if sum > max { Err(()) } else { Ok(sum) };
        }
    }
    Ok(1)
}
