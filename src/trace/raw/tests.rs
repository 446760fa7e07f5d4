//! Every event of pages captured on the development VM (kernel 6.18.44; see parse/ringbuf/tests.rs for how),
//! decoded from the raw bytes, rendered, and compared with the kernel's own text of the same events.

use super::*;
use crate::parse::ftrace::{self, parse_line};
use crate::parse::ringbuf::{format, page, page_header};

/// The small capture of parse/ringbuf/tests.rs: pages of CPUs 0 and 1 with the kernel's text of the same events.
pub(crate) const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/samples/ringbuf-firecracker-vm-6.18"
);

/// bench/capture_ringbuf.py on the development VM (kernel 6.18.44, 2 vCPUs, other engineers' builds and tests
/// running): 1500 cycles of a python SCHED_FIFO 50 loop on CPU 1 marking each, a SCHED_FIFO 90 spinner on the
/// same CPU 300 µs every 50 ms; the cyclic run's events (tracefs.rs EVENTS) of CPU 1, 116 pages.
pub(crate) const CYCLIC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/samples/ringbuf-firecracker-vm-6.18-cyclic"
);

fn text(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}/{name}")).unwrap()
}

/// The schema of a capture in `dir` (its page header, formats and symbols).
pub(crate) fn schema_of(dir: &str) -> Schema {
    let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
    let formats = std::fs::read_dir(format!("{dir}/formats"))
        .unwrap()
        .map(|e| format(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    Schema::new(
        page_header(&read("header_page")).unwrap(),
        formats,
        Symbols::parse(&read("kallsyms")),
    )
    .unwrap()
}

fn schema() -> Schema {
    schema_of(DIR)
}

/// Every record of the pages in `dir/file`, read as CPU `cpu`'s.
pub(crate) fn events_of(s: &Schema, dir: &str, cpu: usize, file: &str) -> Vec<RawEvent> {
    let raw = std::fs::read(format!("{dir}/{file}")).unwrap();
    raw.chunks(s.header.page_size)
        .flat_map(|p| {
            page(p, &s.header)
                .unwrap()
                .records
                .into_iter()
                .map(|r| RawEvent {
                    cpu,
                    ts: r.ts,
                    data: r.data.into(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn events(s: &Schema, cpu: usize, file: &str) -> Vec<RawEvent> {
    events_of(s, DIR, cpu, file)
}

/// %p prints hashed pointers: compare everything else.
fn unhashed(body: &str) -> String {
    body.split(' ')
        .map(|w| match w.split_once('=') {
            Some((k @ ("hrtimer" | "skbaddr"), _)) => format!("{k}=P"),
            _ if w.len() == 16 && w.bytes().all(|b| b.is_ascii_hexdigit()) => "P".to_string(),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn rendered_lines_match_the_kernels_text() {
    let s = schema();
    let mut comms = saved_cmdlines(&text("saved_cmdlines"));
    let mut kinds = std::collections::BTreeSet::new();
    let mut marks = 0;
    // cpu1-irq: one page of an earlier 1 MB capture (same kernel, same script) holding irq_handler_entry.
    for (cpu, raw, txt) in [
        (0, "cpu0.raw", "cpu0.txt"),
        (1, "cpu1.raw", "cpu1.txt"),
        (1, "cpu1-irq.raw", "cpu1-irq.txt"),
    ] {
        let ev = events(&s, cpu, raw);
        // Names a pid had during the sample (bash exec'ing python3 keeps its pid).
        let mut names: std::collections::HashMap<i64, std::collections::BTreeSet<String>> =
            Default::default();
        let ours: Vec<String> = ev
            .iter()
            .map(|e| {
                s.comms(std::iter::once(e), &mut comms);
                for (p, c) in &comms {
                    names.entry(*p).or_default().insert(c.clone());
                }
                s.event(e, |p| comms.get(&p).map(String::as_str))
                    .unwrap()
                    .line()
            })
            .collect();
        let kernel = text(txt);
        let kernel: Vec<_> = kernel.lines().filter_map(parse_line).collect();
        assert_eq!(ours.len(), kernel.len());
        for (o, k) in ours.iter().zip(&kernel) {
            let p = parse_line(o).unwrap_or_else(|| panic!("unparsable: {o}"));
            assert_eq!((p.pid, p.cpu, p.event), (k.pid, k.cpu, k.event), "{o}");
            // The kernel rounds to the µs (ns2usecs adds 500).
            assert_eq!((p.ts_ns + 500) / 1000 * 1000, k.ts_ns, "{o}");
            assert_eq!(unhashed(p.body), unhashed(k.body), "{o}");
            // The kernel's comm cache is read when it prints (python3 for a bash that exec'd it later) or misses a
            // pid ("<...>"); ours is the name the events carried up to then.
            let renamed = names
                .get(&i64::from(p.pid))
                .is_some_and(|n| n.len() > 1 && n.contains(k.comm));
            assert!(
                p.comm == k.comm || k.comm == "<...>" || renamed,
                "{o} vs {}",
                k.comm
            );
            marks += usize::from(k.event == "tracing_mark_write");
        }
        kinds.extend(kernel.iter().map(|k| k.event.to_string()));
    }
    assert!(marks >= 10);
    for e in [
        "sched_switch",
        "sched_waking",
        "irq_handler_entry",
        "irq_handler_exit",
        "softirq_raise",
        "hrtimer_expire_entry",
        "local_timer_entry",
        "call_function_single_entry",
        "napi_poll",
        "netif_rx",
        "netif_receive_skb",
        "net_dev_xmit",
        "tracing_mark_write",
    ] {
        assert!(kinds.contains(e), "{e} in the sample");
    }
}

#[test]
fn markers_and_ticks_from_the_bytes() {
    let s = schema();
    let ev = events(&s, 1, "cpu1.raw");
    let kernel = text("cpu1.txt");
    let marks: Vec<u64> = ev
        .iter()
        .filter_map(|e| s.mark(&e.data))
        .map(|m| m.lat_ns)
        .collect();
    let want: Vec<u64> = kernel
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.event == "tracing_mark_write")
        .filter_map(|l| mark(l.body))
        .map(|m| m.lat_ns)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(marks, want);
    let ticks = ev.iter().filter(|e| s.is_tick(&e.data)).count();
    let tick_lines = kernel.matches("function=tick_nohz_handler").count();
    assert!(tick_lines > 0);
    assert_eq!(ticks, tick_lines);
}

#[test]
fn what_cannot_be_read_raw_is_refused() {
    let h = page_header(&text("header_page")).unwrap();
    let syms = Symbols::parse(&text("kallsyms"));
    let print = format(&text("formats/ftrace_print")).unwrap();
    // arm64's ipi_entry carries a pointer to a kernel string.
    let ipi = format("name: ipi_entry\nID: 9\nformat:\n\tfield:const char * reason;\toffset:8;\tsize:8;\tsigned:0;\n")
        .unwrap();
    assert!(
        Schema::new(h, vec![print.clone(), ipi], syms.clone())
            .unwrap_err()
            .to_string()
            .contains("ipi_entry")
    );
    // A kernel whose sched_switch lacks a field we print.
    let mut sw = format(&text("formats/sched_sched_switch")).unwrap();
    sw.fields.retain(|f| f.name != "prev_state");
    assert!(
        Schema::new(h, vec![print.clone(), sw], syms)
            .unwrap_err()
            .to_string()
            .contains("prev_state")
    );
    // kptr_restrict: every address reads 0.
    let hidden = Symbols::parse("0000000000000000 T _text\n0000000000000000 t tick_nohz_handler\n");
    assert!(Schema::new(h, vec![print], hidden).is_err());
    let s = Symbols::parse(&text("kallsyms"));
    assert_eq!(s.name(0xffffffff81442960), "tick_nohz_handler");
    assert_eq!(s.name(0xffffffff81442968), "tick_nohz_handler+0x8");
    assert_eq!(s.name(0x10), "0x10");
    let _ = ftrace::fields("");
}
