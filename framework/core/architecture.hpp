// The model's two architectural choices, one enum each for the spec that names them (YAML
// `model.arch: encoder | decoder | encoder_decoder`, `model.pooling: mean | first`) and the model
// that builds them: spec::Arch and model::Arch are this one type.
#pragma once

namespace ablate {

enum class Arch { Encoder, Decoder, EncoderDecoder };
enum class Pooling { Mean, First };  // a classifier's summary of the encoder output (Classification)

// The spec's names: "encoder", "decoder", "encoder_decoder"; "mean", "first".
inline const char* to_string(Arch v) {
  switch (v) {
    case Arch::Encoder: return "encoder";
    case Arch::Decoder: return "decoder";
    case Arch::EncoderDecoder: return "encoder_decoder";
  }
  return "?";
}
inline const char* to_string(Pooling v) { return v == Pooling::Mean ? "mean" : "first"; }

}  // namespace ablate
