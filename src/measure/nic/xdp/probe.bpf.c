// SPDX-License-Identifier: MIT
/*
 * rmp-eval's XDP program for `run --path af_xdp`: the probe's frames (one EtherType, set by the loader) go to the
 * AF_XDP socket bound to the queue they arrived on; every other frame (ARP, IP, IPv6, ...) goes on to the kernel's
 * stack untouched, so the interface keeps working during a run.
 *
 * Self-contained on purpose: no kernel or libbpf headers, so `clang -target bpfel` is the only build dependency and
 * the object is the same for every host architecture. The few kernel ABI values below are stable UAPI.
 */

typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
/* libbpf's BTF map definition macros (bpf_helpers.h), which aya reads the same way. */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) __typeof__(val) *name

/* enum xdp_action and enum bpf_map_type (include/uapi/linux/bpf.h). */
#define XDP_PASS 2
#define BPF_MAP_TYPE_XSKMAP 17

struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

/* BPF_FUNC_redirect_map: a miss in the map returns the low bits of flags (XDP_PASS) since Linux 5.3. */
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;

/* One slot per receive queue (--rxq takes 0 to 4095); only the run's queue is filled. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

/* The probe's EtherType in network byte order, written by the loader before the program is loaded. */
volatile const __u16 probe_ethertype = 0;

SEC("xdp")
int rmp_eval_probe(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (data + 14 > end)
		return XDP_PASS;
	if (*(__u16 *)(data + 12) != probe_ethertype)
		return XDP_PASS;
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
