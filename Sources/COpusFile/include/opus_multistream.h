// opusfile.h includes <opus_multistream.h>, which is in /usr/include/opus: a directory only
// pkg-config's `opusfile` flags add, and they link the library too (see bl_opusfile.h). This
// directory is on the include path of COpusFile and every target that depends on it.
#include <opus/opus_multistream.h>
