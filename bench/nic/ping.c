/* Minimal AF_PACKET ping for the NIC benchmark: one 60-byte raw frame (EtherType 0x88B5) per period from a
 * SCHED_FIFO thread pinned to a CPU, blocking receive of the echo; RTT = CLOCK_MONOTONIC after recv() returns
 * minus before send(). Prints count, lost, p50 and p99 in microseconds.
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
#include <time.h>

#define ETYPE 0x88B5

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
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
    long long *rtt = calloc(n, sizeof *rtt);
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
        for (;;) {
            ssize_t k = recv(fd, r, sizeof r, 0);
            if (k < 0) {
                lost++;
                break;
            }
            long j;
            memcpy(&j, r + 14, sizeof j);
            if (k >= 22 && j == i) {
                rtt[got++] = now_ns() - t0;
                break;
            }
        }
    }
    qsort(rtt, got, sizeof *rtt, cmp);
    printf("count=%ld lost=%ld p50_us=%.3f p99_us=%.3f\n", got, lost, got ? rtt[got / 2] / 1000.0 : 0.0,
           got ? rtt[got * 99 / 100] / 1000.0 : 0.0);
    return 0;
}
