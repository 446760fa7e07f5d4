//! The text exposition format: HELP and TYPE once per family, samples with escaped labels, numbers as
//! Prometheus reads them (NaN, +Inf, integers without a point).

use std::fmt::Write as _;

/// Metric families being written: HELP and TYPE once per family, then its samples.
#[derive(Default)]
pub(crate) struct Text(String);

impl Text {
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let l: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let _ = write!(self.0, "{{{}}}", l.join(","));
        }
        let _ = writeln!(self.0, " {}", number(v));
    }

    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

/// A label value as the exposition format wants it: backslash, double quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
