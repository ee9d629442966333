//! Progress of a call on stderr: an indicatif bar on a terminal, plain lines otherwise.
//!
//! Plain lines are `calling TOOL` when the request is out, then `progress 3/10 message` (or
//! `progress 3 message` without a total) for each report. On a terminal, a spinner appears
//! when the call takes a moment, becomes a bar when the server reports a total, and is
//! cleared when the call ends.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use toolwire::jsonrpc::Progress;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An indicatif bar on the terminal.
    Bar,
    /// Plain lines on stderr.
    Lines,
    /// Nothing.
    Quiet,
}

/// The bar on screen, if any, for the logger and the Ctrl-C watcher to draw around.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// How long a call runs before the spinner appears (a quick call draws nothing).
const SPINNER_DELAY: Duration = Duration::from_millis(200);
/// The bar's resolution: the position is a share of this.
const BAR_STEPS: u64 = 1000;

fn active() -> Option<ProgressBar> {
    ACTIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

fn set_active(bar: Option<ProgressBar>) {
    *ACTIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = bar;
}

/// Runs `write` with the bar (if any) hidden, so a log line does not tear it.
pub fn suspend(write: impl FnOnce()) {
    match active() {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// Clears the bar (if any) for good.
pub fn clear() {
    if let Some(bar) = active() {
        bar.finish_and_clear();
    }
    set_active(None);
}

/// The progress display of one call.
pub struct Display {
    mode: Mode,
    tool: String,
    started: Instant,
    bar: Mutex<Option<ProgressBar>>,
    /// How many progress reports were shown, so the waiter can tell news from silence.
    reports: std::sync::atomic::AtomicU64,
}

impl Display {
    /// A display for a call of `tool`.
    pub fn new(mode: Mode, tool: &str) -> Display {
        Display {
            mode,
            tool: tool.to_owned(),
            started: Instant::now(),
            bar: Mutex::new(None),
            reports: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The request is about to go out.
    pub fn started(&self) {
        if self.mode == Mode::Lines {
            errln!("calling {}", self.tool);
        }
    }

    /// Called while waiting: shows the spinner once the call has taken a moment.
    pub fn tick(&self) {
        if self.mode == Mode::Bar && self.started.elapsed() >= SPINNER_DELAY {
            self.with_bar(|_| {});
        }
    }

    /// How many progress reports were shown so far.
    pub fn progress_count(&self) -> u64 {
        self.reports.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The call runs as a task, now in `status`: `task ID STATUS message` as a line, or the
    /// bar's message.
    pub fn task(&self, id: &str, status: &str, message: Option<&str>) {
        let text = match message.map(str::trim) {
            Some(message) if !message.is_empty() => format!("task {id} {status}: {message}"),
            _ => format!("task {id} {status}"),
        };
        match self.mode {
            Mode::Quiet => {}
            Mode::Lines => errln!("{text}"),
            Mode::Bar => self.with_bar(|bar| {
                bar.set_message(crate::terminal::shown_line(&text).into_owned());
            }),
        }
    }

    /// One progress report.
    pub fn progress(&self, progress: &Progress) {
        self.reports
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let numbers = match progress.total {
            Some(total) => format!("{}/{}", number(progress.progress), number(total)),
            None => number(progress.progress),
        };
        let text = match progress.message.as_deref().map(str::trim) {
            Some(message) if !message.is_empty() => format!("{numbers} {message}"),
            _ => numbers,
        };
        match self.mode {
            Mode::Quiet => {}
            Mode::Lines => errln!("progress {text}"),
            Mode::Bar => self.with_bar(|bar| {
                // indicatif draws the message as it is: escape it here (see `terminal`).
                bar.set_message(crate::terminal::shown_line(&text).into_owned());
                match progress.total.filter(|total| *total > 0.0) {
                    Some(total) => {
                        bar.set_length(BAR_STEPS);
                        let share = (progress.progress / total).clamp(0.0, 1.0);
                        bar.set_position((share * BAR_STEPS as f64).round() as u64);
                        bar.set_style(bar_style());
                    }
                    None => bar.set_style(spinner_style()),
                }
            }),
        }
    }

    /// The call ended: the bar goes away, leaving the screen as it was.
    pub fn finish(&self) {
        let bar = self
            .bar
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(bar) = bar {
            bar.finish_and_clear();
            set_active(None);
        }
    }

    fn with_bar(&self, use_it: impl FnOnce(&ProgressBar)) {
        let mut slot = self
            .bar
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let bar = slot.get_or_insert_with(|| {
            // Set up hidden, so the first frame drawn is complete.
            let bar = ProgressBar::hidden();
            bar.set_style(spinner_style());
            bar.set_prefix(crate::terminal::shown_line(&self.tool).into_owned());
            bar.set_message("waiting for the result");
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(100));
            set_active(Some(bar.clone()));
            bar
        });
        use_it(bar);
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix} {elapsed} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {wide_msg}")
        .map(|style| style.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// A progress number: whole numbers without decimals, others with up to two.
pub fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        let text = format!("{value:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::number;

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(0.126), "0.13");
        assert_eq!(number(-1.0), "-1");
    }
}
