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

// fOFDGetlk is F_OFD_GETLK on Linux.
const fOFDGetlk = 36

// heldByOther reports whether some open file description holds a lock on
// the file at path that would conflict with an exclusive lock: a live
// writer's spare volume or a compression's temporary file (section 7.4,
// step 1). It only tests, it takes no lock. A file that is gone is not held.
func heldByOther(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	fl := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fOFDGetlk, uintptr(unsafe.Pointer(&fl)))
		switch errno {
		case 0:
			return fl.Type != syscall.F_UNLCK, nil
		case syscall.EINTR:
			continue
		default:
			return false, errno
		}
	}
}
