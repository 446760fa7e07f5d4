//! The option values clap parses for us, each refused with one line a person reads: CPU numbers, counts,
//! microseconds, priorities, frame lengths, durations, load kinds.

/// Why an option's value was refused; clap prints it after "invalid value '…' for '--…'".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ValueError {
    #[error("'{0}' is not a CPU number (a non-negative integer)")]
    NotCpu(String),
    #[error("CPU {0} is out of range")]
    CpuRange(String),
    #[error("a process name is not empty")]
    EmptyComm,
    #[error("'{name}' is {len} bytes; /proc/PID/comm keeps 15 (give those, or --pid)")]
    LongComm { name: String, len: usize },
    #[error("a process name is one line")]
    CommLines,
    #[error("'{given}' is not a whole number ({range})")]
    NotWhole { given: String, range: Range },
    #[error("{value} is out of range ({range})")]
    OutOfRange { value: String, range: Range },
    #[error("'{0}' is not a duration (seconds, or with a unit: 90s, 30m, 24h; at most a year)")]
    NotDuration(String),
    #[error(
        "'{0}' is not a rate (a count per time: 1/h, 1/day, 1/10min, 2/d; at most one per second)"
    )]
    NotRate(String),
    #[error("'{0}' is not a period (25us, 1ms, 1000; 1 us to 1 s in whole us)")]
    NotPeriod(String),
    #[error("'{0}' is not a thread (NAME:PERIOD[:PRIORITY][@CPU], e.g. servo:1ms:70)")]
    NotThread(String),
    #[error("thread name '{name}' in '{given}': 1 to 15 letters, digits, '-' or '_'")]
    ThreadName { name: String, given: String },
    #[error("priority in '{given}': {why}")]
    ThreadPriority { given: String, why: Box<ValueError> },
    #[error("'{given}' is not a profile ({names})")]
    NotProfile { given: String, names: String },
    #[error("'{0}' is not a load (cpu, io, vm, net, irq)")]
    NotLoad(String),
    #[error("'{0}' is not a clock drift (ppm, -1000 to 1000)")]
    NotDrift(String),
    #[error(
        "'{0}' is not a kernel parameter qualify can try (NAME or NAME=VALUE: letters, digits and _.,=:-/+)"
    )]
    NotKernelParam(String),
    #[error(
        "{0}= is the trial boot's own (a trial that panics must reboot by itself); leave it out"
    )]
    TrialsOwnParam(String),
}

/// The bounds of a whole number, as a refusal states them: "1 to 99", "1 or more".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    lo: u64,
    hi: u64,
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.hi == u64::MAX {
            write!(f, "{} or more", self.lo)
        } else {
            write!(f, "{} to {}", self.lo, self.hi)
        }
    }
}

/// A CPU number: a non-negative integer (range against the machine is checked later, against its CPU count).
pub(crate) fn parse_cpu(s: &str) -> Result<usize, ValueError> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ValueError::NotCpu(s.into()));
    }
    t.parse::<usize>()
        .ok()
        .filter(|&n| n < 8192)
        .ok_or_else(|| ValueError::CpuRange(s.into()))
}

/// A process name as /proc/PID/comm shows it: 1–15 bytes (the kernel keeps 15), one line. A longer one could
/// never match: said here rather than "no such process".
pub(crate) fn parse_comm(s: &str) -> Result<String, ValueError> {
    match s.len() {
        0 => Err(ValueError::EmptyComm),
        len if len > 15 => Err(ValueError::LongComm {
            name: s.into(),
            len,
        }),
        _ if s.contains(['\n', '\0']) => Err(ValueError::CommLines),
        _ => Ok(s.to_string()),
    }
}

/// A whole number in `lo..=hi`, refused with a message a person reads ("'1.5' is not a whole number").
fn whole(s: &str, lo: u64, hi: u64) -> Result<u64, ValueError> {
    let range = Range { lo, hi };
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ValueError::NotWhole {
            given: s.into(),
            range,
        });
    }
    match t.parse::<u64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(ValueError::OutOfRange {
            value: t.into(),
            range,
        }),
    }
}

/// A clock's drift in ppm: -1000 to 1000 (crystals are within ±100).
pub(crate) fn parse_drift_ppm(s: &str) -> Result<f64, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v.abs() <= 1000.0 => Ok(v),
        _ => Err(ValueError::NotDrift(s.to_string())),
    }
}

/// A count of cycles, frames or runs: 1 or more.
pub(crate) fn parse_count(s: &str) -> Result<u64, ValueError> {
    whole(s, 1, u64::MAX)
}

/// Microseconds of a period or band: 1 to 1 000 000.
pub(crate) fn parse_us(s: &str) -> Result<u32, ValueError> {
    whole(s, 1, 1_000_000).map(|v| v as u32)
}

/// A SYNC0 shift in microseconds after the cycle's start: 0 (SYNC0 at the start) to 1 000 000.
pub(crate) fn parse_shift_us(s: &str) -> Result<u32, ValueError> {
    whole(s, 0, 1_000_000).map(|v| v as u32)
}

/// A SCHED_FIFO priority: 1 to 99.
pub(crate) fn parse_priority(s: &str) -> Result<u8, ValueError> {
    whole(s, 1, 99).map(|v| v as u8)
}

/// A frame length with the Ethernet header, without FCS: 60 to 1514 bytes.
pub(crate) fn parse_pktlen(s: &str) -> Result<u16, ValueError> {
    whole(s, 60, 1514).map(|v| v as u16)
}

/// A duration: a number of seconds, or a number with a unit — `90s`, `30m`, `24h`, `2d`, `1.5h`; positive, finite,
/// at most a year. Returns seconds.
pub(crate) fn parse_seconds(s: &str) -> Result<f64, ValueError> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 0.0,
    };
    // Only digits and one point: "inf", "1e3", "-5", "0x10" are not durations.
    let plain = !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.bytes().filter(|&b| b == b'.').count() <= 1;
    match num.parse::<f64>() {
        Ok(v) if plain && scale > 0.0 && v * scale > 0.0 && v * scale <= 31_536_000.0 => {
            Ok(v * scale)
        }
        _ => Err(ValueError::NotDuration(s.into())),
    }
}

/// A rate of rare events, as `--until-confident` takes it: `1/h`, `1/hour`, `1/day`, `2/d`, `1/10min`, `1/30m`;
/// a positive count over a duration (`parse_seconds`'s units, or hour, day, min, sec spelt out). Returns events
/// per second.
pub(crate) fn parse_rate(s: &str) -> Result<f64, ValueError> {
    let bad = || ValueError::NotRate(s.into());
    let (num, per) = s.trim().split_once('/').ok_or_else(bad)?;
    let plain = !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.bytes().filter(|&b| b == b'.').count() <= 1;
    let n: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| plain && *v > 0.0)
        .ok_or_else(bad)?;
    let per = per.trim();
    let split = per
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(per.len());
    let (amount, unit) = per.split_at(split);
    let unit = match unit {
        "hour" | "hours" | "hr" => "h",
        "day" | "days" => "d",
        "min" | "mins" | "minute" | "minutes" => "m",
        "sec" | "secs" | "second" | "seconds" => "s",
        u => u,
    };
    let amount = if amount.is_empty() { "1" } else { amount };
    let secs = parse_seconds(&format!("{amount}{unit}")).map_err(|_| bad())?;
    let rate = n / secs;
    if rate.is_finite() && rate > 0.0 && rate <= 1.0 {
        Ok(rate)
    } else {
        Err(bad())
    }
}

/// A kernel parameter of the user's (qualify --cmdline-extra): one token a boot loader's line can carry as it
/// is, named; not panic= or BOOT_IMAGE=, which the trial boot and the loader set.
pub(crate) fn parse_kernel_param(s: &str) -> Result<String, ValueError> {
    use crate::tunable::cmdline::boot::tokens::{is_safe_token, name, same_name};
    let named = name(s)
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric());
    if !is_safe_token(s) || !named {
        return Err(ValueError::NotKernelParam(s.into()));
    }
    match ["panic", "BOOT_IMAGE"]
        .into_iter()
        .find(|n| same_name(n, name(s)))
    {
        Some(n) => Err(ValueError::TrialsOwnParam(n.into())),
        None => Ok(s.into()),
    }
}

/// A period with a unit, as `--thread` takes it: `25us`, `1ms`, `0.5ms`, `1000` (µs); 1 µs to 1 s, whole µs.
pub(crate) fn parse_period(s: &str) -> Result<u32, ValueError> {
    let t = s.trim();
    let bad = || ValueError::NotPeriod(s.into());
    let (num, scale) = if let Some(n) = t.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1000.0)
    } else {
        (t, 1.0)
    };
    let plain = !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.bytes().filter(|&b| b == b'.').count() <= 1;
    let us = num.parse::<f64>().ok().filter(|_| plain).ok_or_else(bad)? * scale;
    if us.fract() == 0.0 && (1.0..=1_000_000.0).contains(&us) {
        Ok(us as u32)
    } else {
        Err(bad())
    }
}

/// `--thread NAME:PERIOD[:PRIORITY][@CPU]`: a name of 1–15 letters, digits, '-' or '_' (it labels the series,
/// the interval log and the report), a period (`parse_period`), a SCHED_FIFO priority, a CPU.
pub(crate) fn parse_thread(s: &str) -> Result<crate::measure::spec::ThreadSpec, ValueError> {
    let (main, cpu) = match s.split_once('@') {
        Some((m, c)) => (m, Some(parse_cpu(c)?)),
        None => (s, None),
    };
    let parts: Vec<&str> = main.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(ValueError::NotThread(s.into()));
    }
    let name = parts[0];
    if name.is_empty()
        || name.len() > 15
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ValueError::ThreadName {
            name: name.into(),
            given: s.into(),
        });
    }
    let priority = match parts.get(2) {
        Some(p) => Some(parse_priority(p).map_err(|e| ValueError::ThreadPriority {
            given: s.into(),
            why: Box::new(e),
        })?),
        None => None,
    };
    Ok(crate::measure::spec::ThreadSpec {
        name: name.to_string(),
        period_us: parse_period(parts[1])?,
        priority,
        cpu,
    })
}

/// `--profile NAME`: one of the seeds' thread sets (measure/cyclic/profile/).
pub(crate) fn parse_profile(
    s: &str,
) -> Result<crate::measure::cyclic::profile::Profile, ValueError> {
    use crate::measure::cyclic::profile::Profile;
    Profile::from_name(s.trim()).ok_or_else(|| {
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        ValueError::NotProfile {
            given: s.into(),
            names: names.join(", "),
        }
    })
}

/// One kind of --load.
pub(crate) fn parse_load(s: &str) -> Result<crate::measure::load::LoadKind, ValueError> {
    crate::measure::load::LoadKind::from_name(s.trim()).ok_or_else(|| ValueError::NotLoad(s.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units() {
        for (text, secs) in [
            ("90", 90.0),
            ("90s", 90.0),
            ("30m", 1800.0),
            ("24h", 86400.0),
            ("1.5h", 5400.0),
            ("0.5", 0.5),
            ("365d", 31_536_000.0),
        ] {
            assert_eq!(parse_seconds(text), Ok(secs), "{text}");
        }
    }

    #[test]
    fn threads_are_name_period_priority_cpu() {
        let t = parse_thread("base:25us:80@3").unwrap();
        assert_eq!(
            (t.name.as_str(), t.period_us, t.priority, t.cpu),
            ("base", 25, Some(80), Some(3))
        );
        let t = parse_thread("servo:1ms").unwrap();
        assert_eq!((t.period_us, t.priority, t.cpu), (1000, None, None));
        assert_eq!(parse_thread("x:0.5ms:1").unwrap().period_us, 500);
        assert_eq!(parse_thread("x:750").unwrap().period_us, 750);
        for bad in [
            "",
            "servo",
            "servo:",
            ":1ms",
            "servo:1ms:0",
            "servo:1ms:100",
            "servo:0us",
            "servo:1.5us",
            "servo:2s",
            "servo:1ms:50:9",
            "a b:1ms",
            "sixteen-letters-:1ms",
            "servo:1ms@x",
            "servo:1e3",
            "s/x:1ms",
            "servo:-1ms",
        ] {
            let e = parse_thread(bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn rates_are_a_count_per_time() {
        for (text, per_s) in [
            ("1/h", 1.0 / 3600.0),
            ("1/hour", 1.0 / 3600.0),
            ("1/day", 1.0 / 86400.0),
            ("2/d", 2.0 / 86400.0),
            ("1/10min", 1.0 / 600.0),
            ("1/30m", 1.0 / 1800.0),
            ("1/1.5h", 1.0 / 5400.0),
            ("1/s", 1.0),
        ] {
            let got = parse_rate(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!((got - per_s).abs() < 1e-15, "{text}: {got}");
        }
        for bad in [
            "", "h", "1", "0/h", "-1/h", "1/0h", "1/week", "inf/h", "1/h/h", "1e3/h", "2/s",
            "1/ h x",
        ] {
            let e = parse_rate(bad).unwrap_err().to_string();
            assert!(
                e.contains("is not a rate") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn process_names_are_what_comm_can_hold() {
        assert_eq!(parse_comm("rmp-controller"), Ok("rmp-controller".into()));
        assert!(parse_comm("").is_err());
        assert!(
            parse_comm("a-sixteen-bytes!")
                .unwrap_err()
                .to_string()
                .contains("16 bytes")
        );
        assert!(parse_comm("a\nb").is_err());
    }
}
