//! PNG images for the page: test images from eval.json's hex pixels, and a convolution's
//! feature maps as one grid.

use tinytorch::{Error, Result};

fn png_err(e: impl std::fmt::Display) -> Error {
    Error::invalid("dashboard png", e.to_string())
}

/// Encode 8-bit pixels (`channels` 1: grey, 3: RGB, interleaved) as a PNG.
pub fn encode_png(pixels: &[u8], width: usize, height: usize, channels: usize) -> Result<Vec<u8>> {
    let color = match channels {
        1 => png::ColorType::Grayscale,
        3 => png::ColorType::Rgb,
        c => return Err(png_err(format!("{c} channels (1 or 3 expected)"))),
    };
    if pixels.len() != width * height * channels || width == 0 || height == 0 {
        return Err(png_err(format!(
            "{} bytes for a {width}x{height} image of {channels} channel(s)",
            pixels.len()
        )));
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width as u32, height as u32);
        enc.set_color(color);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(png_err)?;
        writer.write_image_data(pixels).map_err(png_err)?;
    }
    Ok(out)
}

/// Decode eval.json's `pixels_hex` (two hex digits per byte, planar `[C, H, W]`).
pub fn decode_hex(hex: &str) -> Result<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return Err(png_err("odd number of hex digits"));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| png_err(format!("bad hex digits at {i}")))
        })
        .collect()
}

/// A `[C, H, W]` image in planar bytes as a PNG (grey for one channel, RGB for three).
pub fn planar_png(planar: &[u8], shape: [usize; 3]) -> Result<Vec<u8>> {
    let [c, h, w] = shape;
    if planar.len() != c * h * w {
        return Err(png_err(format!(
            "{} pixels for an image of shape {shape:?}",
            planar.len()
        )));
    }
    let mut interleaved = vec![0u8; planar.len()];
    for ch in 0..c {
        for i in 0..h * w {
            interleaved[i * c + ch] = planar[ch * h * w + i];
        }
    }
    encode_png(&interleaved, w, h, c)
}

/// The maps of one sample of a convolution's output (`values` of shape `[C, H, W]`) as a
/// grey grid of `ceil(sqrt(C))` columns, each map scaled to its own range (a constant map is
/// mid-grey), 1-pixel white gaps between maps.
pub fn feature_grid(values: &[f64], shape: [usize; 3]) -> Result<Vec<u8>> {
    let [c, h, w] = shape;
    if values.len() != c * h * w || c == 0 {
        return Err(png_err(format!(
            "{} values for feature maps of shape {shape:?}",
            values.len()
        )));
    }
    let cols = (c as f64).sqrt().ceil() as usize;
    let rows = c.div_ceil(cols);
    let (gw, gh) = (cols * (w + 1) - 1, rows * (h + 1) - 1);
    let mut grid = vec![255u8; gw * gh];
    for m in 0..c {
        let map = &values[m * h * w..(m + 1) * h * w];
        let (lo, hi) = map
            .iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        let (x0, y0) = ((m % cols) * (w + 1), (m / cols) * (h + 1));
        for y in 0..h {
            for x in 0..w {
                let v = map[y * w + x];
                let flat = hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater);
                let g = if flat || !v.is_finite() {
                    128.0
                } else {
                    (v - lo) / (hi - lo) * 255.0
                };
                grid[(y0 + y) * gw + x0 + x] = g.round() as u8;
            }
        }
    }
    encode_png(&grid, gw, gh, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pngs_start_with_the_signature_and_bad_sizes_are_errors() {
        let png = planar_png(&[0, 255, 0, 255], [1, 2, 2]).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(planar_png(&[0; 3], [1, 2, 2]).is_err());
        assert!(encode_png(&[0; 8], 2, 2, 2).is_err());
        assert_eq!(decode_hex("00ff7f").unwrap(), [0, 255, 127]);
        assert!(decode_hex("0").is_err() && decode_hex("zz").is_err());
    }

    #[test]
    fn feature_grids_hold_every_map() {
        let values: Vec<f64> = (0..5 * 3 * 3).map(|i| i as f64).collect();
        let png = feature_grid(&values, [5, 3, 3]).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(feature_grid(&values, [4, 3, 3]).is_err());
    }
}
