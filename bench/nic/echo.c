/* Minimal AF_PACKET echo for the NIC benchmark: blocking receive of EtherType 0x88B5 frames, sent back unchanged
 * (a socket bound to one EtherType does not see its own transmissions, so nothing loops).
 * Usage: echo IF */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/socket.h>

#define ETYPE 0x88B5

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: echo IF\n");
        return 2;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETYPE));
    struct sockaddr_ll a = {.sll_family = AF_PACKET, .sll_protocol = htons(ETYPE),
                            .sll_ifindex = (int)if_nametoindex(argv[1])};
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a)) {
        perror("socket");
        return 2;
    }
    unsigned char b[1600];
    for (;;) {
        ssize_t k = recv(fd, b, sizeof b, 0);
        if (k > 0)
            send(fd, b, (size_t)k, 0);
    }
}
