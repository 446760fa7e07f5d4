//! The IPIs' senders: ipi_send_cpu and ipi_send_cpumask (kernel 6.6+) fire on the sending CPU, which the run's
//! own buffers do not record (they follow the RT CPUs), so they go to a tracefs instance of the run's own
//! (`instances/rmp-eval-ipi-PID`) on every CPU, filtered in the kernel to IPIs aimed at an RT CPU, with the
//! sending task's process (record-tgid). The instance is removed when the Tracefs is dropped.

use super::{TraceError, Tracefs};
use crate::trace::senders::UNKNOWN;

/// The instance's buffer per CPU: a new instance takes the boot default (1.4 MB a CPU, 90 MB on 64 CPUs); ~10,000
/// sends a CPU fit in this, and what a full buffer overwrites is counted (`dropped`).
const INSTANCE_KB: &str = "512";

/// The instance's path under tracefs, before the run's pid.
const PREFIX: &str = "instances/rmp-eval-ipi-";

/// The events, by tracefs path under events/, with the filter that keeps the IPIs aimed at `cpus`.
fn events(cpus: &[usize]) -> [(&'static str, String); 2] {
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    let one: Vec<String> = cpus.iter().map(|c| format!("cpu == {c}")).collect();
    [
        ("ipi/ipi_send_cpu", one.join(" || ")),
        (
            "ipi/ipi_send_cpumask",
            format!("cpumask & CPUS{{{}}}", list.join(",")),
        ),
    ]
}

impl Tracefs {
    /// Starts recording who sends IPIs to `cpus`: Ok names the events recorded, Err why the senders stay unknown
    /// (a kernel without the events, or one that refuses the instance or the filters).
    pub(crate) fn record_ipi_senders(&mut self, cpus: &[usize]) -> Result<String, String> {
        if !self
            .host
            .exists(&self.abs("events/ipi/ipi_send_cpu/enable"))
        {
            return Err(format!(
                "{UNKNOWN}: this kernel has no ipi_send events (6.6+)"
            ));
        }
        self.remove_killed_runs_instances();
        let inst = format!("{PREFIX}{}", std::process::id());
        let fail = |e: &dyn std::fmt::Display| format!("{UNKNOWN}: tracefs {inst}: {e}");
        self.host
            .create_dir_all(&self.abs(&inst))
            .map_err(|e| fail(&e))?;
        self.instance = Some(inst.clone());
        let write = |rel: &str, v: &str| {
            self.host
                .write_value(&self.abs(&format!("{inst}/{rel}")), v)
        };
        write("buffer_size_kb", INSTANCE_KB).map_err(|e| fail(&e))?;
        write("options/record-tgid", "1").map_err(|e| fail(&e))?;
        let mut on = Vec::new();
        for (event, filter) in events(cpus) {
            let exists = self
                .host
                .exists(&self.abs(&format!("{inst}/events/{event}")));
            // A kernel that refuses the filter (no cpumask filters before 6.6) leaves the event off: unfiltered
            // it would record every IPI of the machine.
            if exists
                && write(&format!("events/{event}/filter"), &filter).is_ok()
                && write(&format!("events/{event}/enable"), "1").is_ok()
            {
                on.push(event.trim_start_matches("ipi/"));
            }
        }
        let source = match on.as_slice() {
            [] => return Err(fail(&"the ipi_send filters were refused")),
            [one] => {
                format!("{one} only (the other's filter was refused: IPIs it sends are not seen)")
            }
            _ => on.join("/"),
        };
        write("tracing_on", "1").map_err(|e| fail(&e))?;
        Ok(source)
    }

    /// The instance's trace as text (recording stopped first), or None without one.
    pub(crate) fn ipi_senders_text(&self) -> Option<Result<String, TraceError>> {
        let inst = self.instance.as_ref()?;
        let _ = self
            .host
            .write_value(&self.abs(&format!("{inst}/tracing_on")), "0");
        Some(self.read(&format!("{inst}/trace")))
    }

    /// The instances of runs that were killed (SIGKILL, a power cut of the process) before removing theirs: no
    /// process has their pid. The instance's events would record on until the next boot.
    fn remove_killed_runs_instances(&self) {
        let Ok(names) = self.host.list(&self.abs("instances")) else {
            return;
        };
        for name in names {
            let dead = name
                .strip_prefix(&PREFIX["instances/".len()..])
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|p| !self.host.exists(&format!("/proc/{p}")));
            if dead {
                let _ = self
                    .host
                    .remove_dir(&self.abs(&format!("instances/{name}")));
            }
        }
    }

    /// Removes the instance (its events go with it).
    pub(super) fn remove_instance(&mut self) -> Option<String> {
        let inst = self.instance.take()?;
        self.host.remove_dir(&self.abs(&inst)).err().map(|e| {
            format!(
                "could not remove {}: {e}; rmdir it by hand",
                self.abs(&inst)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filters_keep_the_ipis_aimed_at_the_rt_cpus() {
        let [(cpu, one), (mask, any)] = super::events(&[1, 3]);
        assert_eq!(
            (cpu, one.as_str()),
            ("ipi/ipi_send_cpu", "cpu == 1 || cpu == 3")
        );
        assert_eq!(
            (mask, any.as_str()),
            ("ipi/ipi_send_cpumask", "cpumask & CPUS{1,3}")
        );
    }
}
