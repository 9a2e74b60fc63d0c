// sd-bus, systemd's D-Bus library (libsystemd-dev): MPRIS and desktop notifications.
#include <systemd/sd-bus.h>
#include <sys/eventfd.h>
#include <poll.h>
