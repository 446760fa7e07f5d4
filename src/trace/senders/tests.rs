use super::*;

/// The record-tgid capture of the development VM (tests/fixtures/samples/ringbuf-firecracker-vm-6.18-ipi-send).
const SAMPLE: &str = include_str!(
    "../../../tests/fixtures/samples/ringbuf-firecracker-vm-6.18-ipi-send/cpu0-tgid.txt"
);

#[test]
fn sends_are_counted_by_sender_and_the_own_process_is_named() {
    // As if this process were cargo-fmt 21191: its thread tokio-runtime-w 21194 sent one too.
    let all = tally(SAMPLE, &[1], 21191);
    assert_eq!(all.iter().map(|x| x.count).sum::<u64>(), 54);
    let first = &all[0];
    assert_eq!(
        (
            first.row.as_str(),
            first.comm.as_str(),
            first.callsite.as_str(),
            first.count
        ),
        ("CAL", "python3", "ttwu_queue_wakelist", 8)
    );
    assert_eq!(
        describe(first),
        "8 from python3 (pid 21108) via ttwu_queue_wakelist"
    );
    let own: Vec<u32> = all.iter().filter(|x| x.own).map(|x| x.pid).collect();
    assert!(own.iter().all(|p| [21191, 21194].contains(p)), "{own:?}");
    let tokio = all.iter().find(|x| x.pid == 21194).unwrap();
    assert!(tokio.own && tokio.row == "RES");
    assert_eq!(
        describe(tokio),
        "1 from rmp-eval itself (tokio-runtime-w, tid 21194) via wakeup_preempt"
    );
    // Sent from a hard interrupt while rustc (a thread of 20109) ran: the interrupt's, never the task's, even
    // when the task is this process.
    let irq = tally(SAMPLE, &[1], 20109);
    let rustc = irq.iter().find(|x| x.pid == 20111).unwrap();
    assert!(rustc.in_irq && !rustc.own);
    assert_eq!(
        describe(rustc),
        "2 from an interrupt while rustc ran (pid 20109, tid 20111) via generic_exec_single"
    );
    // Listed up to MAX_SENDERS, the rest counted.
    let s = count(SAMPLE, &[1], 21191);
    assert!(s.known());
    assert_eq!(s.senders.len(), MAX_SENDERS);
    assert_eq!(
        s.senders.iter().map(|x| x.count).sum::<u64>() + s.others,
        54
    );
    // None aimed at CPU 0.
    assert!(count(SAMPLE, &[0], 21191).senders.is_empty());
}

#[test]
fn sends_the_buffer_dropped_are_counted() {
    let head = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 19/25   #P:2\n";
    assert_eq!(count(head, &[1], 1).dropped, 6);
    assert_eq!(count(SAMPLE, &[1], 1).dropped, 0);
    let unknown = IpiSenders::unknown("sender unknown: no ipi_send events".into(), &[1]);
    assert!(!unknown.known() && unknown.of_row("CAL").next().is_none());
}
