"""TensorBoard's event-file format, written without TensorFlow or protobuf: a file of
TFRecords (``uint64 length``, ``uint32 masked CRC-32C of the length``, the bytes, ``uint32
masked CRC-32C of the bytes``), each an ``Event`` protocol buffer encoded by hand (the few
fields scalars and histograms use). ``read_events`` decodes them again (for tests)."""

import struct

# ---- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 ----------------------------

_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    """CRC-32C of ``data`` (bytes)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    """The CRC as TFRecords store it: rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    """One TFRecord holding ``data``."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked_crc32c(length)) + data
            + struct.pack("<I", masked_crc32c(data)))


# ---- protocol-buffer encoding of the Event fields used ----------------------------------

def _varint(n):
    n &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf does
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _bytes_field(field, data):
    return _key(field, 2) + _varint(len(data)) + data


def _double_field(field, v):
    return _key(field, 1) + struct.pack("<d", v)


def _float_field(field, v):
    return _key(field, 5) + struct.pack("<f", v)


def _int_field(field, v):
    return _key(field, 0) + _varint(int(v))


def _packed_doubles(field, values):
    return _bytes_field(field, b"".join(struct.pack("<d", v) for v in values))


def scalar_value(tag, value):
    """``Summary.Value{tag, simple_value}``."""
    return _bytes_field(1, tag.encode()) + _float_field(2, value)


def histogram_value(tag, vmin, vmax, num, total, sum_squares, limits, counts):
    """``Summary.Value{tag, histo: HistogramProto}``."""
    histo = (_double_field(1, vmin) + _double_field(2, vmax) + _double_field(3, num)
             + _double_field(4, total) + _double_field(5, sum_squares)
             + _packed_doubles(6, limits) + _packed_doubles(7, counts))
    return _bytes_field(1, tag.encode()) + _bytes_field(5, histo)


def event(wall_time, step=None, summary_values=(), file_version=None):
    """An encoded ``Event``: wall time, step, and a file version or a summary."""
    out = _double_field(1, wall_time)
    if step is not None:
        out += _int_field(2, step)
    if file_version is not None:
        out += _bytes_field(3, file_version.encode())
    if summary_values:
        summary = b"".join(_bytes_field(1, v) for v in summary_values)
        out += _bytes_field(5, summary)
    return out


# ---- decoding, for reading files back ----------------------------------------------------

def _fields(data):
    """(field number, wire type, value) of a protobuf message; values of wire type 2 as
    bytes."""
    i, out = 0, []
    while i < len(data):
        key, i = _read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(data, i)
        elif wire == 1:
            value, i = struct.unpack_from("<d", data, i)[0], i + 8
        elif wire == 5:
            value, i = struct.unpack_from("<f", data, i)[0], i + 4
        elif wire == 2:
            n, i = _read_varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((field, wire, value))
    return out


def _read_varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def read_events(path):
    """The events of a file as dicts: ``wall_time``, ``step``, ``file_version``, and
    ``values``: ``(tag, simple_value)`` or ``(tag, {"min", "max", "num", "sum",
    "sum_squares", "bucket_limit", "bucket"})``. ValueError on a corrupt record."""
    events = []
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        header = data[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        (crc,) = struct.unpack_from("<I", data, i + 8)
        if crc != masked_crc32c(header):
            raise ValueError(f"{path}: bad length checksum at byte {i}")
        body = data[i + 12:i + 12 + n]
        (crc,) = struct.unpack_from("<I", data, i + 12 + n)
        if crc != masked_crc32c(body):
            raise ValueError(f"{path}: bad data checksum at byte {i}")
        i += 16 + n
        ev = {"step": 0, "values": []}
        for field, _, value in _fields(body):
            if field == 1:
                ev["wall_time"] = value
            elif field == 2:
                ev["step"] = value
            elif field == 3:
                ev["file_version"] = value.decode()
            elif field == 5:
                for _, _, v in _fields(value):
                    ev["values"].append(_decode_value(v))
        events.append(ev)
    return events


def _decode_value(data):
    tag, out = None, None
    for field, _, value in _fields(data):
        if field == 1:
            tag = value.decode()
        elif field == 2:
            out = value
        elif field == 5:
            names = {1: "min", 2: "max", 3: "num", 4: "sum", 5: "sum_squares"}
            histo = {"bucket_limit": [], "bucket": []}
            for f, _, v in _fields(value):
                if f in names:
                    histo[names[f]] = v
                else:
                    key = "bucket_limit" if f == 6 else "bucket"
                    histo[key] = list(struct.unpack(f"<{len(v) // 8}d", v))
            out = histo
    return tag, out
