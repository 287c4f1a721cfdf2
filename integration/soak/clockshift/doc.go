// Command clockshift is a harness tool: it runs a program with its wall
// clock moved by an offset the soak test changes at will, without touching
// the machine's clock (time namespaces move only the monotonic and boot
// clocks). It is how integration/soak steps a reflector's clock ±10 min.
//
//	clockshift OFFSET_FILE PROGRAM [ARG...]
//
// OFFSET_FILE holds the offset in whole seconds (e.g. "600" or "-600");
// clockshift reads it again whenever it changes. The program runs as a
// tracee: clockshift starts itself again, installs a seccomp filter that
// traces clock_gettime(CLOCK_REALTIME…) and execs the program; at the exec
// it hides the vDSO from the program's auxiliary vector, so the program's
// clock reads become system calls; each traced one is answered by
// clockshift (the true time plus the offset) and skipped. Other clocks and
// system calls run untouched. SIGTERM, SIGINT and SIGHUP are passed on,
// clockshift exits as the program does, and a SIGKILL of clockshift kills
// the program (PTRACE_O_EXITKILL). Linux on amd64 only.
package main
