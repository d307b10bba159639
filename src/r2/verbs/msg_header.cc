#include "r2/verbs/msg_header.h"

namespace drtmx::r2::verbs {

namespace {
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
}  // namespace

void encode_msg_header(const MsgHeader& h, uint8_t* out) {
  out[0] = kMsgMagic;
  out[1] = static_cast<uint8_t>(h.type);
  put16(out + 2, h.src_node);
  put16(out + 4, h.src_thread);
  put16(out + 6, h.credits);
}

bool decode_msg_header(const uint8_t* in, uint32_t bytes, MsgHeader* out) {
  if (bytes < kMsgHeaderBytes || in[0] != kMsgMagic) return false;
  const uint8_t type = in[1];
  if (type != static_cast<uint8_t>(MsgType::kData) &&
      type != static_cast<uint8_t>(MsgType::kCredit)) {
    return false;
  }
  out->type = static_cast<MsgType>(type);
  if (out->type == MsgType::kCredit && bytes != kMsgHeaderBytes) return false;
  out->src_node = get16(in + 2);
  out->src_thread = get16(in + 4);
  out->credits = get16(in + 6);
  return true;
}

}  // namespace drtmx::r2::verbs
