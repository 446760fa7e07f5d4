//! Pages read from per_cpu/cpu{0,1}/trace_pipe_raw on the development VM (kernel 6.18.44, x86_64, trace_clock mono,
//! a 16 KB per-CPU buffer that overflowed, so pages carry lost-event counts): the sched/irq/timer/irq_vectors/
//! napi/net events and "rmp-eval c=…" markers written by python, read after `per_cpu/cpuN/trace` printed the
//! same events as text (tests/fixtures/samples/ringbuf-firecracker-vm-6.18/).

use super::*;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/samples/ringbuf-firecracker-vm-6.18"
);

fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DIR}/{name}")).unwrap()
}

fn text(name: &str) -> String {
    String::from_utf8(read(name)).unwrap()
}

#[test]
fn header_page_and_formats() {
    let h = page_header(&text("header_page")).unwrap();
    assert_eq!(
        h,
        PageHeader {
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
            page_size: 4096
        }
    );
    let f = format(&text("formats/sched_sched_switch")).unwrap();
    assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
    let next = f.fields.iter().find(|x| x.name == "next_comm").unwrap();
    assert_eq!(
        (next.ty.as_str(), next.offset, next.size, next.signed),
        ("char[16]", 40, 16, false)
    );
    let st = f.fields.iter().find(|x| x.name == "prev_state").unwrap();
    assert_eq!(
        (st.ty.as_str(), st.offset, st.size, st.signed),
        ("long", 32, 8, true)
    );
    let irq = format(&text("formats/irq_irq_handler_entry")).unwrap();
    let name = irq.fields.iter().find(|x| x.name == "name").unwrap();
    assert_eq!(name.ty, "__data_loc char[]");
    let print = format(&text("formats/ftrace_print")).unwrap();
    assert_eq!((print.name.as_str(), print.id), ("print", 5));
    assert!(page_header("garbage").is_none());
    assert!(format("name: x\n").is_none());
}

#[test]
fn captured_pages_decode_in_time_order() {
    let h = page_header(&text("header_page")).unwrap();
    for cpu in [0, 1] {
        let raw = read(&format!("cpu{cpu}.raw"));
        assert_eq!(raw.len() % h.page_size, 0);
        let mut last = 0;
        let mut n = 0;
        let mut lost = Vec::new();
        for p in raw.chunks(h.page_size) {
            let p = page(p, &h).unwrap();
            lost.push(p.lost);
            for r in &p.records {
                assert!(r.ts >= last, "time goes forward");
                last = r.ts;
                n += 1;
            }
        }
        // The text printed from the same buffer has as many events.
        let lines = text(&format!("cpu{cpu}.txt"))
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count();
        assert_eq!(n, lines, "cpu {cpu}");
        // The buffer overflowed (entries-written 3278, in buffer 1110): the first page says events were lost —
        // on CPU 0 without a count (the page was full, no room for it: commit word 0xffffffff80000ff0), on CPU 1
        // with 1639 stored after the data (0xffffffffc0000fd8).
        let first = if cpu == 0 { Some(0) } else { Some(1639) };
        assert_eq!(lost, [first, None, None, None, None], "cpu {cpu}");
    }
}

#[test]
fn malformed_pages_are_errors() {
    let h = page_header(&text("header_page")).unwrap();
    let mut p = read("cpu1.raw")[..4096].to_vec();
    assert!(page(&p[..10], &h).is_err());
    // A commit beyond the page.
    p[8..16].copy_from_slice(&5000u64.to_ne_bytes());
    assert!(page(&p, &h).is_err());
    // A record claiming more bytes than committed: type_len 0 with a huge array[0].
    let mut q = vec![0u8; 4096];
    q[8..16].copy_from_slice(&8u64.to_ne_bytes());
    q[20..24].copy_from_slice(&1000u32.to_ne_bytes());
    assert!(page(&q, &h).is_err());
    // An empty page.
    let e = vec![0u8; 4096];
    assert_eq!(page(&e, &h).unwrap(), Page::default());
}
