// pixel_texture.h — an RGBA texture painted on the CPU, for the dense parts of the picture.
//
// Zoomed out, a 64-rank trace has ~100,000 bars in view, and the memory plot
// a stack of six categories in every pixel column. Drawn as ImGui rects that is
// hundreds of thousands of triangles a frame, and a software rasterizer (Mesa's
// llvmpipe, what Xvfb gives) pays for every one: ~150 ms a frame. Painted into
// pixels on the CPU (the timeline: one pixel row per lane row, paint_row in
// viz/model/timeline.h; the memory plot: the whole plot) and drawn as a few
// textured quads, the same picture costs a texture upload. Sampling is
// GL_NEAREST and the quads are pixel-aligned, so every screen pixel shows
// exactly its texel: the colours stay exact (the screenshot test looks for them).
#pragma once

#include <cstdint>
#include <vector>

#include "imgui.h"

namespace ss::viz {

/// A width x height RGBA8 texture with a CPU copy that is uploaded on demand.
class PixelTexture {
public:
    PixelTexture() = default;
    ~PixelTexture();
    PixelTexture(const PixelTexture&) = delete;
    PixelTexture& operator=(const PixelTexture&) = delete;

    /// Resizes the CPU copy (the texture follows at the next upload); clears nothing.
    /// Creates the texture name on first use, so id() is valid before the first upload.
    void resize(int width, int height);
    /// Deletes the texture (call while the OpenGL context is still current).
    void release();
    /// Row @p y of the CPU copy (width pixels, packed as IM_COL32; row 0 is the top).
    uint32_t* row(int y) { return pixels_.data() + size_t(y) * size_t(w_); }
    /// Sends the CPU copy to the GPU (creates or resizes the texture as needed).
    void upload();
    /// For ImDrawList::AddImage.
    ImTextureID id() const { return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(tex_)); }
    /// The v coordinate of the centre of row @p y.
    float v(int y) const { return (float(y) + 0.5f) / float(h_ > 0 ? h_ : 1); }
    int width() const { return w_; }
    int height() const { return h_; }

private:
    unsigned tex_ = 0;
    int w_ = 0, h_ = 0;          // CPU copy
    int tex_w_ = 0, tex_h_ = 0;  // GPU texture
    std::vector<uint32_t> pixels_;
};

}  // namespace ss::viz
