#ifndef BACKLINE_CTERMINAL_SHIM_H
#define BACKLINE_CTERMINAL_SHIM_H
/* The terminal's settings while `backline play` reads keys, kept in C so that the crash-signal
   handler touches nothing but static C storage and async-signal-safe calls (tcsetattr, sigaction,
   raise): no Swift runtime, no locks, no allocation inside a signal handler.
   The storage lives in function-local statics (Swift emits a header's inline functions, not its
   variables), so every call must come from one Swift file: Sources/backline/TerminalKeys.swift. */
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static inline struct termios *backline_term_saved_settings(void) { static struct termios saved; return &saved; }
static inline volatile sig_atomic_t *backline_term_raw_flag(void) { static volatile sig_atomic_t raw = 0; return &raw; }
static inline struct sigaction *backline_term_previous_actions(void) { static struct sigaction previous[32]; return previous; }
#define backline_term_saved (*backline_term_saved_settings())
#define backline_term_is_raw (*backline_term_raw_flag())
#define backline_term_previous (backline_term_previous_actions())

/// Raw mode on `fd`: no echo, no line editing (signals from Ctrl-C/Ctrl-Z stay on, output as it
/// was), reads return each byte. The settings found are saved first unless raw mode is already on
/// (then they are applied again: after a stop the shell may have put its own back).
/// Returns 0, or -1 with errno.
static inline int backline_term_enter_raw(int fd) {
    if (!backline_term_is_raw && tcgetattr(fd, &backline_term_saved) != 0) return -1;
    struct termios raw = backline_term_saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ECHONL | IEXTEN);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSANOW, &raw) != 0) return -1;
    backline_term_is_raw = 1;
    return 0;
}

/// The saved settings back on `fd` (after dropping unread input when `flush`); nothing when raw
/// mode is off. With `apply` 0 only the flag clears (a process in the background must not touch
/// the terminal the shell now owns). Returns 0, or -1 with errno.
static inline int backline_term_leave_raw(int fd, int apply, int flush) {
    if (!backline_term_is_raw) return 0;
    backline_term_is_raw = 0;
    if (!apply) return 0;
    if (flush) tcflush(fd, TCIFLUSH);
    return tcsetattr(fd, TCSANOW, &backline_term_saved);
}

static inline int backline_term_raw(void) { return backline_term_is_raw; }

static void backline_term_crash(int sig, siginfo_t *info, void *context) {
    if (backline_term_is_raw) {
        backline_term_is_raw = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &backline_term_saved);
    }
    if (sig > 0 && sig < 32) {
        struct sigaction *p = &backline_term_previous[sig];
        if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
            p->sa_sigaction(sig, info, context);  /* e.g. Swift's backtracer */
        } else if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN && p->sa_handler) {
            p->sa_handler(sig);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/// On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT and SIGTRAP: the terminal's settings
/// back first, then the handler installed before (if any), then the default action.
static inline void backline_term_install_crash_handlers(void) {
    const int signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT, SIGTRAP };
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = backline_term_crash;
        action.sa_flags = SA_SIGINFO;
        sigemptyset(&action.sa_mask);
        sigaction(signals[i], &action, &backline_term_previous[signals[i]]);
    }
}
#endif
