"""A batch's samples and their geometry: dicts (JSON's keys, as the C API writes them) whose
fields are also typed attributes (sample.path is a str, sample.geometry.scale_x a float)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional


class Geometry(Dict[str, Any]):
    """How a sample's tensor maps to its original (imgpipe::SampleGeometry's fields, by key or typed
    attribute, e.g. g.width, g.scale_x, g.pad_left; Batch.to_image maps boxes with it)."""

    __slots__ = ()

    @property
    def width(self) -> int:
        """The original's width as displayed (after the EXIF orientation)."""
        return int(self["width"])

    @property
    def height(self) -> int:
        """The original's height as displayed."""
        return int(self["height"])

    @property
    def stored_width(self) -> int:
        """The width as the file stores it (before the orientation)."""
        return int(self["stored_width"])

    @property
    def stored_height(self) -> int:
        """The height as the file stores it."""
        return int(self["stored_height"])

    @property
    def orientation(self) -> int:
        """EXIF orientation, 1 to 8 (1: none)."""
        return int(self["orientation"])

    @property
    def decode_scale(self) -> int:
        """The DCT scaling the decoder applied (1, 2, 4 or 8)."""
        return int(self["decode_scale"])

    @property
    def resize(self) -> str:
        """The resize mode applied (transform.resize.mode)."""
        return str(self["resize"])

    @property
    def scale_x(self) -> float:
        """Tensor pixels per original pixel, horizontally (< 0 when flipped)."""
        return float(self["scale_x"])

    @property
    def scale_y(self) -> float:
        """Tensor pixels per original pixel, vertically (< 0 when flipped)."""
        return float(self["scale_y"])

    @property
    def offset_x(self) -> float:
        """The tensor x of the original's (0, 0)."""
        return float(self["offset_x"])

    @property
    def offset_y(self) -> float:
        """The tensor y of the original's (0, 0)."""
        return float(self["offset_y"])

    @property
    def resized_width(self) -> int:
        """The resized image's width."""
        return int(self["resized_width"])

    @property
    def resized_height(self) -> int:
        """The resized image's height."""
        return int(self["resized_height"])

    @property
    def pad_left(self) -> int:
        """Letterbox: padding columns left of the image (else 0)."""
        return int(self["pad_left"])

    @property
    def pad_top(self) -> int:
        """Letterbox: padding rows above the image (else 0)."""
        return int(self["pad_top"])

    @property
    def crop_x(self) -> int:
        """Center_crop: the tensor's origin in the resized image (else 0)."""
        return int(self["crop_x"])

    @property
    def crop_y(self) -> int:
        """Center_crop: the tensor's origin in the resized image (else 0)."""
        return int(self["crop_y"])

    @property
    def tensor_width(self) -> int:
        """Transform.resize.width."""
        return int(self["tensor_width"])

    @property
    def tensor_height(self) -> int:
        """Transform.resize.height."""
        return int(self["tensor_height"])

    @property
    def box_x(self) -> int:
        """The box of the original that was resized (random or centre crop; else the whole image)."""
        return int(self["box_x"])

    @property
    def box_y(self) -> int:
        """The box's top."""
        return int(self["box_y"])

    @property
    def box_width(self) -> int:
        """The box's width."""
        return int(self["box_width"])

    @property
    def box_height(self) -> int:
        """The box's height."""
        return int(self["box_height"])

    @property
    def flip_x(self) -> bool:
        """Mirrored left to right."""
        return bool(self["flip_x"])

    @property
    def flip_y(self) -> bool:
        """Mirrored top to bottom."""
        return bool(self["flip_y"])

    @property
    def epoch(self) -> int:
        """The run's epoch, whose random draws these are."""
        return int(self["epoch"])


class Sample(Dict[str, Any]):
    """Where one sample came from, by key or typed attribute: path, frame, input_index, route, label
    and geometry (a Geometry)."""

    __slots__ = ()

    def __init__(self, fields: Dict[str, Any]) -> None:
        super().__init__(fields)
        if isinstance(self.get("geometry"), dict) and not isinstance(self["geometry"], Geometry):
            self["geometry"] = Geometry(self["geometry"])

    @property
    def path(self) -> str:
        """The input file (or stream URL, camera:N)."""
        return str(self["path"])

    @property
    def frame(self) -> int:
        """The frame's index in its video, -1 for an image."""
        return int(self["frame"])

    @property
    def clip(self) -> int:
        """input.video.clips: the clip this frame belongs to (numbered in its video's plan for the
        epoch), -1 without clips."""
        return int(self.get("clip", -1))

    @property
    def pts(self) -> Optional[float]:
        """The frame's presentation time in seconds from its stream's start; None when unknown
        (images, streams, pushed frames)."""
        v = self.get("pts")
        return None if v is None else float(v)

    @property
    def input_index(self) -> int:
        """Position in the discovered input list."""
        return int(self["input_index"])

    @property
    def route(self) -> str:
        """"cpu" or "gpu": where it was decoded."""
        return str(self["route"])

    @property
    def label(self) -> int:
        """The class index (input.labels: folders), -1: none."""
        return int(self["label"])

    @property
    def geometry(self) -> Geometry:
        """How its tensor maps to the original."""
        g = self["geometry"]
        return g if isinstance(g, Geometry) else Geometry(g)


class Clip(Dict[str, Any]):
    """One clip of a batch (input.video.clips): its video (path, input_index, label), its number
    in the video's plan for the epoch (clip), and its frames' indices in presentation order
    (frames) and presentation times in seconds (pts), by key or typed attribute; `samples` are
    its frames' Samples (their geometry: the clip's shared crop and flip)."""

    __slots__ = ()

    @staticmethod
    def of(frames: List[Sample]) -> "Clip":
        first = frames[0]
        return Clip({"path": first.path, "input_index": first.input_index, "label": first.label,
                     "clip": first.clip, "frames": [f.frame for f in frames],
                     "pts": [f.pts for f in frames], "samples": frames})

    @property
    def path(self) -> str:
        """The video file."""
        return str(self["path"])

    @property
    def input_index(self) -> int:
        """The video's position in the discovered input list."""
        return int(self["input_index"])

    @property
    def label(self) -> int:
        """The class index (input.labels: folders), -1: none."""
        return int(self["label"])

    @property
    def clip(self) -> int:
        """The clip's number in its video's plan for the epoch."""
        return int(self["clip"])

    @property
    def frames(self) -> List[int]:
        """The frames' indices in presentation order (never time x nominal fps)."""
        return [int(f) for f in self["frames"]]

    @property
    def pts(self) -> List[float]:
        """The frames' presentation times in seconds from the stream's start (NaN where unknown)."""
        return [math.nan if t is None else float(t) for t in self["pts"]]

    @property
    def samples(self) -> List[Sample]:
        """The frames' Samples, in the clip's order."""
        return list(self["samples"])
