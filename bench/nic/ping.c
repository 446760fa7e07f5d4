/* Minimal AF_PACKET ping for the NIC benchmark: one 60-byte raw frame (EtherType 0x88B5) per period from a
 * SCHED_FIFO thread pinned to a CPU, blocking receive of the echo (stop and wait). Two RTTs per frame: user space
 * (CLOCK_MONOTONIC after recvmsg() returns minus before send()) and kernel software stamps (SO_TIMESTAMPING: RX
 * stamp of the echo minus TX stamp from the error queue), the latter measured as rmp-eval measures. Prints count,
 * lost, and p50/p99 of each in microseconds.
 * Usage: ping IF SECONDS PERIOD_US CPU PRIORITY */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/net_tstamp.h>
#include <linux/errqueue.h>
#include <time.h>

#define ETYPE 0x88B5

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The software stamp (ts[0] of SCM_TIMESTAMPING) of a received message, in ns; 0 if none. */
static long long stamp(struct msghdr *m) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
            struct timespec t[3];
            memcpy(t, CMSG_DATA(c), sizeof t);
            return t[0].tv_sec * 1000000000LL + t[0].tv_nsec;
        }
    return 0;
}

static long long recv_stamped(int fd, unsigned char *b, size_t n, int flags, ssize_t *len) {
    char ctl[256];
    struct iovec v = {b, n};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    *len = recvmsg(fd, &m, flags);
    return *len < 0 ? 0 : stamp(&m);
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: ping IF SECONDS PERIOD_US CPU PRIORITY\n");
        return 2;
    }
    long secs = atol(argv[2]), period = atol(argv[3]) * 1000L;
    long n = secs * 1000000000L / period;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    struct sched_param sp = {.sched_priority = atoi(argv[5])};
    if (sched_setaffinity(0, sizeof set, &set) || sched_setscheduler(0, SCHED_FIFO, &sp)) {
        perror("sched");
        return 2;
    }
    mlockall(MCL_CURRENT | MCL_FUTURE);
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETYPE));
    struct sockaddr_ll a = {.sll_family = AF_PACKET, .sll_protocol = htons(ETYPE),
                            .sll_ifindex = (int)if_nametoindex(argv[1])};
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a)) {
        perror("socket");
        return 2;
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int tsf = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &tsf, sizeof tsf);
    long long *rtt = calloc(n, sizeof *rtt), *krtt = calloc(n, sizeof *krtt);
    long kgot = 0;
    unsigned char f[60] = {0}, r[1600];
    memset(f, 0xff, 6);
    f[6] = 0x02;
    f[12] = ETYPE >> 8;
    f[13] = ETYPE & 0xff;
    long got = 0, lost = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < n; i++) {
        next.tv_nsec += period;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        memcpy(f + 14, &i, sizeof i);
        long long t0 = now_ns();
        send(fd, f, sizeof f, 0);
        ssize_t k;
        long long tx = recv_stamped(fd, r, sizeof r, MSG_ERRQUEUE | MSG_DONTWAIT, &k);
        for (;;) {
            long long rx = recv_stamped(fd, r, sizeof r, 0, &k);
            if (k < 0) {
                lost++;
                break;
            }
            long j;
            memcpy(&j, r + 14, sizeof j);
            if (k >= 22 && j == i) {
                rtt[got++] = now_ns() - t0;
                if (tx == 0) /* the stamp was not queued yet when we looked */
                    tx = recv_stamped(fd, f + 0, 0, MSG_ERRQUEUE | MSG_DONTWAIT, &k);
                if (tx && rx)
                    krtt[kgot++] = rx - tx;
                break;
            }
        }
    }
    qsort(rtt, got, sizeof *rtt, cmp);
    qsort(krtt, kgot, sizeof *krtt, cmp);
    printf("count=%ld lost=%ld p50_us=%.3f p99_us=%.3f kernel_count=%ld kernel_p50_us=%.3f kernel_p99_us=%.3f\n",
           got, lost, got ? rtt[got / 2] / 1000.0 : 0.0, got ? rtt[got * 99 / 100] / 1000.0 : 0.0, kgot,
           kgot ? krtt[kgot / 2] / 1000.0 : 0.0, kgot ? krtt[kgot * 99 / 100] / 1000.0 : 0.0);
    return 0;
}
