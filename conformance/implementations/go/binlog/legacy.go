package binlog

// Legacy jPOS-EE version 1 segments (Appendix B): read, never written.

// LegacyFirstRecord is where the first version 1 record starts (B.1).
const LegacyFirstRecord = 248

func checkLegacyHeader(b []byte, logNumber uint32) (*Header, error) {
	h := &Header{
		Version:             Version1,
		LogNumber:           logNumber,
		Status:              be.Uint16(b[6:]),
		LastElementPosition: be.Uint64(b[8:]),
		NextLogNumber:       be.Uint32(b[20:]),
	}
	if be.Uint32(b[16:]) != logNumber {
		return nil, segmentError(ClassBadHeader, logNumber, 16, "log number differs from the file name")
	}
	if h.Status > 1 {
		return nil, segmentError(ClassBadHeader, logNumber, 6, "status")
	}
	if h.LastElementPosition < LegacyFirstRecord {
		return nil, segmentError(ClassBadHeader, logNumber, 8, "last element position below 248")
	}
	return h, nil
}

// legacyRecord applies the checks of Appendix B.4 to the record at p of a
// version 1 segment with segment end s and file size f. It returns the
// record's data and the offset after it; index is the index assigned to it.
func legacyRecord(r *segmentFile, p, s, f, index uint64) ([]byte, uint64, error) {
	if p+4 > s || p+4 > f {
		return nil, 0, recordError(ClassTruncated, r.log, p, index, "length field cut short")
	}
	lb, err := r.readAt(p, 4)
	if err != nil {
		return nil, 0, err
	}
	length := int64(int32(be.Uint32(lb)))
	if length < 0 || p+4+uint64(length) > s {
		return nil, 0, recordError(ClassLengthOutOfRange, r.log, p, index, "")
	}
	end := p + 4 + uint64(length)
	if end > f {
		return nil, 0, recordError(ClassTruncated, r.log, p, index, "data cut short")
	}
	data, err := r.readAt(p+4, uint64(length))
	if err != nil {
		return nil, 0, err
	}
	return data, end, nil
}
