package binlog

import (
	"os"
	"syscall"
	"unsafe"
)

// fOFDSetlkw is F_OFD_SETLKW on Linux; the syscall package does not name it.
const fOFDSetlkw = 38

// ofdLock takes (F_WRLCK) or releases (F_UNLCK) an exclusive whole-file
// open-file-description lock on f, waiting for it (section 9, W-32).
func ofdLock(f *os.File, typ int16) error {
	fl := syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0}
	for {
		_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fOFDSetlkw, uintptr(unsafe.Pointer(&fl)))
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
