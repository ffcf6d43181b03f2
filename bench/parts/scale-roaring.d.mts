import roaring from "roaring";

export { RoaringBitmap32 } from "roaring";
export default roaring;
